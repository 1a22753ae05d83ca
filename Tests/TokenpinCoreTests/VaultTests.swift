import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

@Suite struct VaultSlotTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A PIN slot for "482916" and the vault key it wraps (base64).
    func makeSlot(user: String = "alice") throws -> (VaultSlot, String) {
        let vaultKey = Vault.newKey()
        let kek = try testKDF.deriveKey(from: secret("482916"))
        let slot = try VaultSlot.seal(
            vaultKey, keyEncryptionKey: kek, kind: .pin, kdf: testKDF, user: user, created: now)
        return (slot, base64(vaultKey))
    }

    @Test func wrapsAndUnwrapsTheVaultKey() throws {
        let (slot, vaultKey) = try makeSlot()
        let kek = try slot.kdf.deriveKey(from: secret("482916"))
        #expect(opened(slot, kek, "alice") == vaultKey)
        #expect(slot.isWellFormed)
    }

    @Test func wrongPINDoesNotOpen() throws {
        let (slot, _) = try makeSlot()
        let kek = try slot.kdf.deriveKey(from: secret("482917"))
        #expect(opened(slot, kek, "alice") == nil)
    }

    @Test func headerTamperingIsDetected() throws {
        let (slot, _) = try makeSlot()
        let kek = try slot.kdf.deriveKey(from: secret("482916"))
        #expect(opened(slot, kek, "bob") == nil, "moved to another user")
        var edited = slot
        edited.kind = .recovery
        #expect(opened(edited, kek, "alice") == nil, "kind changed")
        edited = slot
        edited.kdf.passes = 2
        #expect(opened(edited, kek, "alice") == nil, "parameters changed")
        edited = slot
        edited.wrappedKey[5] ^= 0x40
        #expect(opened(edited, kek, "alice") == nil, "ciphertext changed")
        edited = slot
        edited.nonce[0] ^= 1
        #expect(opened(edited, kek, "alice") == nil, "nonce changed")
    }

    @Test func tokenBindingIsAuthenticated() throws {
        let vaultKey = Vault.newKey()
        let kek = SecureRandom.secret(32)
        let binding = TokenBinding(
            serial: "000612345678", cardPublicKey: Data(repeating: 1, count: 32),
            ephemeralPublicKey: Data(repeating: 2, count: 32))
        let slot = try VaultSlot.seal(
            vaultKey, keyEncryptionKey: kek, kind: .token, kdf: KDFParameters(algorithm: .blake2b),
            token: binding, user: "alice", created: now)
        #expect(slot.isWellFormed)
        #expect(opened(slot, kek, "alice") != nil)
        var edited = slot
        edited.token?.serial = "000699999999"
        #expect(opened(edited, kek, "alice") == nil)
    }

    @Test func malformedSlotsAreRecognised() throws {
        let (slot, _) = try makeSlot()
        var bad = slot
        bad.nonce = Data([1, 2, 3])
        #expect(!bad.isWellFormed)
        bad = slot
        bad.kdf.memoryKiB = 64 << 20
        #expect(!bad.isWellFormed, "a tampered file must not make verification allocate 64 GiB")
        bad = slot
        bad.kdf.algorithm = .blake2b
        #expect(!bad.isWellFormed)
        bad = slot
        bad.token = TokenBinding(serial: "x", cardPublicKey: Data(count: 32), ephemeralPublicKey: Data(count: 32))
        #expect(!bad.isWellFormed)
    }
}

@Suite struct KDFTests {
    @Test func parametersRoundTripThroughJSON() throws {
        let parameters = KDFParameters.argon2id(memoryKiB: 65536, passes: 3)
        let data = try JSONEncoder().encode(parameters)
        #expect(try JSONDecoder().decode(KDFParameters.self, from: data) == parameters)
        #expect(parameters.summary == "argon2id m=64 MiB t=3 p=1")
    }

    @Test func calibrationPicksTheCapWhenFast() {
        // A machine where 64 MiB x 3 passes takes 30 ms: 256 MiB fits, then passes fill the target.
        let calibration = KDFCalibration(targetMilliseconds: 300, physicalMemory: 16 << 30)
        let result = calibration.calibrate { memory, passes in 30.0 * Double(memory * passes) / Double(65536 * 3) }
        #expect(result.parameters.memoryKiB == 256 * 1024)
        #expect(result.parameters.passes == 7)
        #expect(result.parameters.algorithm == .argon2id13)
    }

    @Test func calibrationShrinksMemoryOnASlowMachine() {
        // 64 MiB x 3 passes takes 200 ms: the target allows about 96 MiB at 3 passes.
        let calibration = KDFCalibration(targetMilliseconds: 300, physicalMemory: 16 << 30)
        let result = calibration.calibrate { memory, passes in 200.0 * Double(memory * passes) / Double(65536 * 3) }
        #expect(result.parameters.memoryKiB == 96 * 1024)
        #expect(result.parameters.passes == 3)
    }

    @Test func calibrationNeverGoesBelowTheFloor() {
        let calibration = KDFCalibration(targetMilliseconds: 300, physicalMemory: 16 << 30)
        let result = calibration.calibrate { memory, passes in 2000.0 * Double(memory * passes) / Double(65536 * 3) }
        #expect(result.parameters.memoryKiB == 64 * 1024)
        #expect(result.parameters.passes == 3)
    }

    @Test func memoryCapIsAQuarterOfRAM() {
        #expect(KDFCalibration(physicalMemory: 512 << 20).memoryCapKiB == 128 * 1024)
        #expect(KDFCalibration(physicalMemory: 128 << 20).memoryCapKiB == 64 * 1024, "the floor wins")
        #expect(KDFCalibration(physicalMemory: 64 << 30).memoryCapKiB == 256 * 1024)
    }
}

@Suite struct RetryCounterTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func countsDownAndLocks() {
        var counter = RetryCounter(max: 3)
        counter.consumeAttempt(at: start)
        counter.consumeAttempt(at: start)
        #expect(counter.remaining == 1 && !counter.isLocked)
        counter.consumeAttempt(at: start)
        #expect(counter.isLocked && counter.lockedAt == start)
        counter.consumeAttempt(at: start)
        #expect(counter.remaining == 0)
        counter.restore()
        #expect(counter.remaining == 3 && counter.failures == 0 && counter.lockedAt == nil)
    }

    @Test func delayFollowsTheSchedule() {
        let schedule = [0, 0, 30, 300]
        var counter = RetryCounter(max: 10)
        counter.consumeAttempt(at: start)
        #expect(counter.delay(at: start, schedule: schedule) == 0)
        counter.consumeAttempt(at: start)
        #expect(counter.delay(at: start, schedule: schedule) == 0)
        counter.consumeAttempt(at: start)
        #expect(counter.delay(at: start.addingTimeInterval(10), schedule: schedule) == 20)
        #expect(counter.delay(at: start.addingTimeInterval(30), schedule: schedule) == 0)
        counter.consumeAttempt(at: start)
        #expect(counter.delay(at: start.addingTimeInterval(1), schedule: schedule) == 299)
        counter.consumeAttempt(at: start)
        #expect(counter.delay(at: start, schedule: schedule) == 300, "past the end, the last entry holds")
        #expect(counter.delay(at: start.addingTimeInterval(-100), schedule: schedule) == 300, "clock set back")
    }
}

@Suite struct RecoveryKeyTests {
    @Test func formatsInSixGroupsAndParsesBack() throws {
        let key = RecoveryKey.generate()
        let written = text(RecoveryKey.format(key))
        #expect(written.count == 35)
        #expect(written.split(separator: "-").map(\.count) == [5, 5, 5, 5, 5, 5])
        #expect(!written.contains { "ILOU".contains($0) })
        let parsed = try RecoveryKey.parse(secret(written))
        #expect(Bool(same(parsed, key)))
        let sloppy = try RecoveryKey.parse(secret(written.lowercased().replacingOccurrences(of: "-", with: " ")))
        #expect(Bool(same(sloppy, key)))
    }

    @Test func lookAlikesReadAsDigits() throws {
        let key = RecoveryKey.generate()
        let written = text(RecoveryKey.format(key))
        let swapped = written.replacingOccurrences(of: "0", with: "O").replacingOccurrences(of: "1", with: "l")
        let reparsed = try RecoveryKey.parse(secret(swapped))
        #expect(Bool(same(reparsed, key)))
    }

    @Test func typosAreCaughtByTheChecksum() throws {
        let written = text(RecoveryKey.format(RecoveryKey.generate()))
        var characters = Array(written)
        characters[0] = characters[0] == "A" ? "B" : "A"
        #expect(throws: RecoveryKey.ParseError.checksumMismatch) {
            _ = try RecoveryKey.parse(secret(String(characters)))
        }
    }

    @Test(
        arguments: [
            ("", .malformed), ("ABCDE", .malformed), ("ABCDE-ABCDE-ABCDE-ABCDE-ABCDE-ABCD", .malformed),
            ("ABCDE-ABCDE-ABCDE-ABCDE-ABCDE-ABCDE-A", .malformed),
            ("ABCDE-ABCDE-ABCDE-ABCDE-ABCDE-ABCD!", .invalidCharacter),
            // 26 data characters carry 130 bits; a key has 128, so the last character's low bits must be zero.
            ("ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", .malformed),
        ] as [(String, RecoveryKey.ParseError)])
    func malformedKeysAreRefused(typed: String, error: RecoveryKey.ParseError) {
        #expect(throws: error) { _ = try RecoveryKey.parse(secret(typed)) }
    }
}
