import Foundation
import TokenpinTestSupport

@testable import TokenpinCore

func pin(_ text: String) -> PIN { PIN(secret(text)) }

let testKDF = KDFParameters.argon2id(memoryKiB: 8 * 1024, passes: 1)

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
