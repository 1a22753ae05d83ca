import Foundation
import TokenpinTestSupport

@testable import TokenpinCore

func pin(_ text: String) -> PIN { PIN(secret(text)) }

let testKDF = KDFParameters.argon2id(memoryKiB: 8 * 1024, passes: 1)

/// An enrolment record for `user` with PIN 482916 (under `testKDF`), a random recovery key and `remaining` tries
/// of 5, created at a fixed time.
func makeTestRecord(user: String = "alice", remaining: Int = 5) throws -> EnrolmentRecord {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let vaultKey = Vault.newKey()
    let pinSlot = try VaultSlot.seal(
        vaultKey, keyEncryptionKey: try testKDF.deriveKey(from: secret("482916")), kind: .pin,
        kdf: testKDF, user: user, created: now)
    let recoveryKDF = KDFParameters(algorithm: .blake2b)
    let recoverySlot = try VaultSlot.seal(
        vaultKey, keyEncryptionKey: try recoveryKDF.deriveKey(from: SecureRandom.secret(16)),
        kind: .recovery, kdf: recoveryKDF, user: user, created: now)
    var counter = RetryCounter(max: 5)
    counter.remaining = remaining
    return EnrolmentRecord(user: user, created: now, counter: counter, slots: [pinSlot, recoverySlot])
}

/// Whether two secrets hold the same bytes (Swift Testing's macros need copyable operands).
func same(_ a: borrowing SecretBytes, _ b: borrowing SecretBytes) -> Bool { a.isEqual(to: b) }

/// The text a slot opens to, or nil.
func opened(_ slot: VaultSlot, _ kek: borrowing SecretBytes, _ user: String) -> String? {
    guard let key = slot.open(keyEncryptionKey: kek, user: user) else { return nil }
    return key.withUnsafeBytes { Data($0).base64EncodedString() }
}

func base64(_ secret: borrowing SecretBytes) -> String { secret.withUnsafeBytes { Data($0).base64EncodedString() } }

/// Whether `error` is a `ConfigError` naming `file` and `line` (0: the file as a whole) whose message mentions
/// `fragment`.
func isConfigError(_ error: any Error, file: String = "x", line: Int, mentioning fragment: String) -> Bool {
    guard let error = error as? ConfigError else { return false }
    return error.file == file && error.line == line && error.message.contains(fragment)
}
