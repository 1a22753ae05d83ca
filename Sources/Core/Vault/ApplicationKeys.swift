internal import CSodium

/// The name of an application a key is derived for (`ssh:work`, `restic`, `age`): 1 to 64 bytes of
/// `[a-z0-9._:-]`, starting with a letter or a digit, so a name is never a path, an option or an empty string.
/// Names starting with `tokenpin:` are tokenpin's own (`tokenpin:login-keyring`): no one asks for them by name.
public struct ApplicationName: Sendable, Hashable, CustomStringConvertible {
    /// The name as given.
    public let rawValue: String

    /// The name, or nil when `text` is not one (or is one of tokenpin's own, `tokenpin:...`).
    public init?(_ text: String) {
        guard Self.isValid(text) else { return nil }
        rawValue = text
    }

    /// One of tokenpin's own names, which `init?` refuses.
    init(reserved text: String) {
        precondition(text.hasPrefix(Self.reservedPrefix), "a reserved name starts with \(Self.reservedPrefix)")
        rawValue = text
    }

    /// The prefix of tokenpin's own names: a key under it is released only inside tokenpin (the login keyring).
    public static let reservedPrefix = "tokenpin:"

    /// The longest name, in bytes.
    public static let maximumLength = 64

    /// Whether `text` matches `[a-z0-9][a-z0-9._:-]{0,63}` and does not start with `tokenpin:`.
    public static func isValid(_ text: String) -> Bool {
        guard !text.hasPrefix(reservedPrefix) else { return false }
        let bytes = Array(text.utf8)
        guard let first = bytes.first, bytes.count <= maximumLength, isLetterOrDigit(first) else { return false }
        return bytes.allSatisfy { isLetterOrDigit($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x3A || $0 == 0x2D }
    }

    static func isLetterOrDigit(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) }

    /// What a name must look like, for messages.
    public static let shape = "1 to 64 of a-z 0-9 . _ : - starting with a letter or digit, not with tokenpin:"

    public var description: String { rawValue }
}

/// The keys tokenpin releases after a verification: one 32-byte key per user and application, derived from the
/// vault key, so every key survives what keeps the vault key (`change`, `reset`, re-binding a card) and changes
/// with a new record (`enrol` after `unenrol`, root's reset).
///
/// key = BLAKE2b-256(message = context, key = vault key), keyed BLAKE2b (`crypto_generichash`), where `context` is
/// three fields, each a 2-byte big-endian length and its bytes: the label `tokenpin/application-key/v1`, the user
/// name and the application name (UTF-8). The lengths keep `("ab", "c")` and `("a", "bc")` apart; the label's
/// version names the scheme, so a later one derives different keys and never collides with these.
public enum ApplicationKeys {
    /// The label of the scheme: its version is part of every key.
    public static let label = "tokenpin/application-key/v1"
    /// The length of a released key, in bytes.
    public static let keyLength = 32

    /// The key of `application` for `user` under `vaultKey`, in guarded memory.
    public static func key(
        vaultKey: borrowing SecretBytes, user: String, application: ApplicationName
    ) throws(CryptoError) -> SecretBytes {
        try BLAKE2b.keyedHash(context(user: user, application: application), key: vaultKey, length: keyLength)
    }

    /// The public message of the derivation (`key`).
    public static func context(user: String, application: ApplicationName) -> [UInt8] {
        var out: [UInt8] = []
        for text in [label, user, application.rawValue] {
            let bytes = Array(text.utf8)
            out += [UInt8((bytes.count >> 8) & 0xFF), UInt8(bytes.count & 0xFF)] + bytes
        }
        return out
    }
}

/// How a released key is written out: the raw bytes, lower-case hex, or standard base64 with padding. The text
/// forms are made in guarded memory (libsodium's encoders), never in a `String`.
public enum KeyEncoding: String, Sendable, CaseIterable {
    /// The 32 bytes as they are.
    case raw
    /// 64 lower-case hex digits.
    case hex
    /// 44 characters of standard base64 (`=` padded).
    case base64

    /// `key` in this encoding, in new guarded memory; a text form without a newline.
    ///
    /// The corresponding C functions are `sodium_bin2hex` and `sodium_bin2base64`.
    public func encode(_ key: borrowing SecretBytes) -> SecretBytes {
        switch self {
        case .raw:
            return key.duplicate()
        case .hex:
            // bin2hex writes a terminating NUL: one byte more, then copied without it.
            let text = SecretBytes(count: key.count * 2 + 1)
            text.withUnsafeMutableBytes { out in
                key.withUnsafeBytes { bytes in
                    _ = sodium_bin2hex(
                        out.baseAddress!.assumingMemoryBound(to: CChar.self), out.count,
                        bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
                }
            }
            return text.prefix(key.count * 2)
        case .base64:
            let variant = sodium_base64_VARIANT_ORIGINAL
            let size = sodium_base64_encoded_len(key.count, variant)
            let text = SecretBytes(count: size)
            text.withUnsafeMutableBytes { out in
                key.withUnsafeBytes { bytes in
                    _ = sodium_bin2base64(
                        out.baseAddress!.assumingMemoryBound(to: CChar.self), out.count,
                        bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, variant)
                }
            }
            return text.prefix(size - 1)
        }
    }

    /// Decodes `count` bytes from hex `text` into guarded memory; nil when `text` is not exactly that.
    ///
    /// The corresponding C function is `sodium_hex2bin`.
    public static func decodeHex(_ text: borrowing SecretBytes, count: Int) -> SecretBytes? {
        guard text.count == count * 2 else { return nil }
        let out = SecretBytes(count: count)
        var written = 0
        let status = out.withUnsafeMutableBytes { bytes in
            text.withUnsafeBytes { hex in
                sodium_hex2bin(
                    bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count,
                    hex.baseAddress!.assumingMemoryBound(to: CChar.self), hex.count, nil, &written, nil)
            }
        }
        guard status == 0, written == count else { return nil }
        return out
    }
}
