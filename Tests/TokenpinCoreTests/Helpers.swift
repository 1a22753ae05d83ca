import Foundation
@testable import TokenpinCore

func secret(_ text: String) -> SecretBytes {
    var bytes = Array(text.utf8)
    return SecretBytes(consuming: &bytes)
}

func pin(_ text: String) -> PIN { PIN(secret(text)) }

func text(_ secret: borrowing SecretBytes) -> String {
    secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
}

/// A fresh private directory under the system temporary directory.
func temporaryDirectory(_ name: String = "core") -> String {
    let path = NSTemporaryDirectory() + "/tokenpin-test-\(name)-\(UUID().uuidString)"
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                             attributes: [.posixPermissions: 0o700])
    return path
}

/// A clock tests move by hand.
final class ManualTime: TimeSource, @unchecked Sendable {
    // @unchecked Sendable: tests use one instance from one task at a time.
    var now: Date
    var monotonicNanoseconds: UInt64 = 0
    init(_ now: Date = Date(timeIntervalSince1970: 1_800_000_000)) { self.now = now }
    func advance(_ seconds: Double) { now = now.addingTimeInterval(seconds) }
}

let testKDF = KDFParameters.argon2id(memoryKiB: 8 * 1024, passes: 1)

/// Whether two secrets hold the same bytes (Swift Testing's macros need copyable operands).
func same(_ a: borrowing SecretBytes, _ b: borrowing SecretBytes) -> Bool { a.isEqual(to: b) }

/// The text a slot opens to, or nil.
func opened(_ slot: VaultSlot, _ kek: borrowing SecretBytes, _ user: String) -> String? {
    guard let key = slot.open(keyEncryptionKey: kek, user: user) else { return nil }
    return key.withUnsafeBytes { Data($0).base64EncodedString() }
}

func base64(_ secret: borrowing SecretBytes) -> String { secret.withUnsafeBytes { Data($0).base64EncodedString() } }
