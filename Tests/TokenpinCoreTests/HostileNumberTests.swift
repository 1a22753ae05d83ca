import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

/// Records and counters carrying numbers at and past their bounds.
///
/// Every case must end in an error that names the field; none may trap. A trap kills the test
/// process, so on code without the range checks these tests do not fail, they crash.
@Suite struct HostileRecordTests {
    /// A valid record with a PIN, a recovery and a token slot, as a JSON object to tamper with.
    static func validRecordObject() throws -> [String: Any] {
        let user = "alice"
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let vaultKey = Vault.newKey()
        let pinSlot = try VaultSlot.seal(
            vaultKey, keyEncryptionKey: SecureRandom.secret(32), kind: .pin, kdf: testKDF,
            user: user, created: now)
        let blake = KDFParameters(algorithm: .blake2b)
        let recoverySlot = try VaultSlot.seal(
            vaultKey, keyEncryptionKey: SecureRandom.secret(32), kind: .recovery,
            kdf: blake, user: user, created: now)
        let binding = TokenBinding(
            serial: "000512345678", cardPublicKey: Data(repeating: 1, count: 32),
            ephemeralPublicKey: Data(repeating: 2, count: 32), reader: "Sim Reader 00 00")
        let tokenSlot = try VaultSlot.seal(
            vaultKey, keyEncryptionKey: SecureRandom.secret(32), kind: .token,
            kdf: KDFParameters(algorithm: .blake2b), token: binding, user: user,
            created: now)
        let record = EnrolmentRecord(
            user: user, created: now, counter: RetryCounter(max: 5),
            slots: [pinSlot, recoverySlot, tokenSlot])
        let data = try RecordStore.encode(record)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// One tampered field: a path into the record (`counter.max`, `slots.0.kdf.passes`) and the value put there.
    struct Case: CustomTestStringConvertible, Sendable {
        var path: String
        var value: Value
        /// The field name the error must mention.
        var field: String
        var expected: StoreError.Code = .corrupt

        enum Value: Sendable {
            case int(Int)
            case bytes(Int)
            case text(String)
        }

        var testDescription: String {
            switch value {
            case .int(let number): "\(path) = \(number)"
            case .bytes(let count): "\(path) = \(count) bytes"
            case .text(let text): "\(path) = \"\(text.prefix(12))\"… (\(text.utf8.count) bytes)"
            }
        }
    }

    static let extremes = [Int.max, Int.min, -1]

    static let cases: [Case] = {
        var cases: [Case] = []
        func numbers(_ path: String, _ values: [Int], field: String, expected: StoreError.Code = .corrupt) {
            cases += values.map { Case(path: path, value: .int($0), field: field, expected: expected) }
        }
        numbers("version", extremes + [0, 2], field: "version", expected: .unknownVersion)
        numbers("counter.max", extremes + [0, RetryCounter.maximumTries + 1], field: "counter.max")
        numbers("counter.remaining", extremes + [6], field: "counter.remaining")
        numbers("counter.failures", extremes + [RetryCounter.maximumFailureCount + 1], field: "counter.failures")
        numbers(
            "counter.recoveryFailures", extremes + [RetryCounter.maximumFailureCount + 1],
            field: "counter.recoveryFailures")
        numbers(
            "slots.0.kdf.memoryKiB", extremes + [0, 7, KDFParameters.maximumMemoryKiB + 1, Int.max / 1024 + 1],
            field: "pin slot: kdf.memoryKiB")
        numbers("slots.0.kdf.passes", extremes + [0, KDFParameters.maximumPasses + 1], field: "pin slot: kdf.passes")
        numbers("slots.1.kdf.memoryKiB", extremes + [1], field: "recovery slot: kdf.memoryKiB")
        numbers("slots.1.kdf.passes", extremes + [1], field: "recovery slot: kdf.passes")
        numbers("slots.2.kdf.memoryKiB", [Int.max, Int.min], field: "token slot: kdf.memoryKiB")
        for (path, field, good) in [
            ("slots.0.kdf.salt", "pin slot: kdf.salt", 16), ("slots.0.nonce", "pin slot: nonce", 24),
            ("slots.0.wrappedKey", "pin slot: wrappedKey", 48),
            ("slots.1.kdf.salt", "recovery slot: kdf.salt", 16),
            ("slots.2.token.cardPublicKey", "token slot: token.cardPublicKey", 32),
            ("slots.2.token.ephemeralPublicKey", "token slot: token.ephemeralPublicKey", 32),
        ] {
            cases += [0, good - 1, good + 1, 4096].map { Case(path: path, value: .bytes($0), field: field) }
        }
        cases += [
            Case(path: "user", value: .text(""), field: "user"),
            Case(path: "user", value: .text(String(repeating: "a", count: 65)), field: "user"),
            Case(path: "user", value: .text("../alice"), field: "user"),
            Case(path: "slots.2.token.serial", value: .text(""), field: "token slot: token.serial"),
            Case(
                path: "slots.2.token.serial", value: .text(String(repeating: "9", count: 65)),
                field: "token slot: token.serial"),
            Case(
                path: "slots.2.token.reader", value: .text(String(repeating: "r", count: 257)),
                field: "token slot: token.reader"),
        ]
        return cases
    }()

    static func set(_ value: Any, at path: [String], in object: Any) -> Any {
        guard let key = path.first else { return value }
        if var array = object as? [Any], let index = Int(key) {
            array[index] = set(value, at: Array(path.dropFirst()), in: array[index])
            return array
        }
        var dictionary = object as? [String: Any] ?? [:]
        dictionary[key] = set(value, at: Array(path.dropFirst()), in: dictionary[key] as Any)
        return dictionary
    }

    @Test(arguments: cases)
    func hostileFieldIsRefusedNamingIt(_ hostile: Case) throws {
        let value: Any =
            switch hostile.value {
            case .int(let number): NSNumber(value: number)
            case .bytes(let count): Data(repeating: 7, count: count).base64EncodedString()
            case .text(let text): text
            }
        let object = Self.set(
            value, at: hostile.path.split(separator: ".").map(String.init), in: try Self.validRecordObject())
        let data = try JSONSerialization.data(withJSONObject: object)
        do {
            let record = try RecordStore.decode(data, path: "hostile.json")
            Issue.record("accepted a record with \(hostile.testDescription): \(record.counter)")
        } catch {
            #expect(error.code == hostile.expected, "\(error)")
            #expect(error.detail.contains(hostile.field), "\(error.detail) does not name \(hostile.field)")
        }
    }

    @Test func theUntamperedRecordDecodes() throws {
        let data = try JSONSerialization.data(withJSONObject: try Self.validRecordObject())
        let record = try RecordStore.decode(data, path: "valid.json", user: "alice")
        #expect(record.slots.count == 3)
    }

    @Test func numbersBeyond64BitsAreRefused() throws {
        var text = String(
            decoding: try JSONSerialization.data(withJSONObject: try Self.validRecordObject()), as: UTF8.self)
        text = text.replacingOccurrences(of: "\"failures\":0", with: "\"failures\":99999999999999999999999")
        #expect(text.contains("99999999999999999999999"))
        #expect {
            try RecordStore.decode(Data(text.utf8), path: "big.json")
        } throws: { ($0 as? StoreError)?.code == .corrupt && ($0 as? StoreError)?.path == "big.json" }
    }
}

@Suite struct SaturatingCounterTests {
    @Test(arguments: [Int.max, Int.min, -1, 0, RetryCounter.maximumFailureCount - 1, RetryCounter.maximumFailureCount])
    func failuresStayInRange(_ failures: Int) {
        var counter = RetryCounter(max: 5)
        counter.failures = failures
        counter.consumeAttempt(at: Date(timeIntervalSince1970: 1_800_000_000))
        #expect((1...RetryCounter.maximumFailureCount).contains(counter.failures))
        counter.consumeAttempt(at: Date(timeIntervalSince1970: 1_800_000_001))
        #expect((1...RetryCounter.maximumFailureCount).contains(counter.failures))
    }

    @Test(arguments: [Int.max, Int.min, -1, 0, 1])
    func remainingNeverGoesBelowZero(_ remaining: Int) {
        var counter = RetryCounter(max: 5)
        counter.remaining = remaining
        counter.consumeAttempt(at: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(counter.remaining >= 0)
        #expect(counter.remaining < Swift.max(1, remaining))
    }

    @Test(arguments: [Int.max, Int.min, -1, 0, RetryCounter.maximumFailureCount])
    func recoveryFailuresSaturate(_ failures: Int) {
        var counter = RetryCounter(max: 5)
        counter.recoveryFailures = failures
        counter.countRecoveryFailure()
        #expect((1...RetryCounter.maximumFailureCount).contains(counter.recoveryFailures))
    }

    @Test func aCounterAtTheBoundsStillPassesTheStructuralCheck() throws {
        var counter = RetryCounter(max: RetryCounter.maximumTries)
        counter.failures = RetryCounter.maximumFailureCount
        counter.recoveryFailures = RetryCounter.maximumFailureCount
        for _ in 0..<3 {
            counter.consumeAttempt(at: Date(timeIntervalSince1970: 1_800_000_000))
            counter.countRecoveryFailure()
        }
        #expect(counter.rangeProblem == nil)
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// Failures, seconds since the last attempt (negative: in the future; NaN and infinities too), the schedule.
    struct DelayCase: Sendable, CustomTestStringConvertible {
        var failures: Int
        var ago: Double
        var schedule: [Int]
        var testDescription: String { "failures \(failures), \(ago) s ago, schedule \(schedule)" }
    }

    @Test(arguments: [
        DelayCase(failures: Int.max, ago: 0, schedule: [Int.max]),
        DelayCase(failures: Int.max, ago: -1e300, schedule: [Int.max]),
        DelayCase(failures: 1, ago: 1e300, schedule: [Int.max]),
        DelayCase(failures: Int.min, ago: 0, schedule: [30]),
        DelayCase(failures: 3, ago: 0, schedule: [Int.min, -1, Int.max]),
        DelayCase(failures: 2, ago: 0, schedule: [Int.min, -1, Int.max]),
        DelayCase(failures: 1, ago: -9e18, schedule: [86_400]),
        DelayCase(failures: 1, ago: 9e18, schedule: [86_400]),
        DelayCase(failures: 1, ago: .nan, schedule: [30]),
        DelayCase(failures: 1, ago: .infinity, schedule: [30]),
        DelayCase(failures: 1, ago: -.infinity, schedule: [30]),
    ])
    func delayNeverTraps(_ hostile: DelayCase) {
        var counter = RetryCounter(max: 5)
        counter.failures = hostile.failures
        counter.lastAttemptAt = Date(timeIntervalSince1970: Self.now.timeIntervalSince1970 - hostile.ago)
        let delay = counter.delay(at: Self.now, schedule: hostile.schedule)
        #expect((0...RetryCounter.maximumDelaySeconds).contains(delay))
    }

    @Test func delayKeepsItsMeaningWithinBounds() {
        var counter = RetryCounter(max: 5)
        counter.failures = 2
        counter.lastAttemptAt = Self.now
        #expect(counter.delay(at: Self.now.addingTimeInterval(10), schedule: [0, 30]) == 20)
        #expect(counter.delay(at: Self.now.addingTimeInterval(-10), schedule: [0, 30]) == 30)
        #expect(counter.delay(at: Self.now.addingTimeInterval(31), schedule: [0, 30]) == 0)
        counter.failures = Int.max
        #expect(counter.delay(at: Self.now, schedule: [0, 30, 300]) == 300)
    }
}

@Suite struct HostileKDFTests {
    @Test(arguments: [Int.max, Int.min, -1, 0, KDFParameters.maximumMemoryKiB + 1])
    func deriveRefusesMemoryOutOfRange(_ memory: Int) {
        let parameters = KDFParameters(algorithm: .argon2id13, memoryKiB: memory, passes: 1)
        #expect(!parameters.isWithinBounds)
        #expect {
            _ = try parameters.deriveKey(from: secret("482916"))
        } throws: { ($0 as? CryptoError)?.code == .kdfFailed }
    }

    @Test(arguments: [Int.max, Int.min, -1, 0])
    func argon2RefusesPassesAndMemoryOutOfRange(_ number: Int) {
        #expect {
            _ = try Argon2id.deriveKey(
                password: secret("482916"), salt: Array(repeating: 0, count: 16), memoryBytes: 8 << 20,
                passes: number)
        } throws: { ($0 as? CryptoError)?.code == .kdfFailed }
        #expect {
            _ = try Argon2id.deriveKey(
                password: secret("482916"), salt: Array(repeating: 0, count: 16), memoryBytes: number,
                passes: 1)
        } throws: { ($0 as? CryptoError)?.code == .kdfFailed }
    }

    @Test func calibrationSurvivesAbsurdMeasurements() {
        for measured in [0.0, -1.0, Double.nan, Double.infinity, 1e300, 1e-300] {
            let calibration = KDFCalibration(targetMilliseconds: 10_000, physicalMemory: UInt64.max)
            let result = calibration.calibrate { _, _ in measured }
            #expect(result.parameters.isWithinBounds, "measured \(measured)")
        }
    }
}
