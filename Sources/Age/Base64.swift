internal import CSodium
package import TokenpinCore

/// Standard base64 without padding, as age writes stanza arguments and bodies (RFC 4648 §4); decoding refuses
/// every non-canonical form (padding, leftover bits that are not zero, a length that is no whole byte), as the
/// age format asks. Through libsodium's `sodium_bin2base64` and `sodium_base642bin`, into guarded memory.
package enum AgeBase64 {
    /// `sodium_init`, once (thread safe and idempotent; the rest of tokenpin has called it already).
    static let sodiumReady: Bool = sodium_init() >= 0

    static var variant: Int32 { sodium_base64_VARIANT_ORIGINAL_NO_PADDING }

    /// The encoding of `secret`, in guarded memory (a file key's encoding is as secret as the key).
    ///
    /// The corresponding C function is `sodium_bin2base64`.
    package static func encode(_ secret: borrowing SecretBytes) -> SecretBytes {
        _ = sodiumReady
        let size = sodium_base64_encoded_len(secret.count, variant)  // with the final NUL
        let text = SecretBytes(count: size)
        text.withUnsafeMutableBytes { out in
            secret.withUnsafeBytes { bytes in
                _ = sodium_bin2base64(
                    out.baseAddress!.assumingMemoryBound(to: CChar.self), size,
                    bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, variant)
            }
        }
        return text.prefix(size - 1)
    }

    /// The encoding of public `bytes` as text.
    package static func encodedString(_ bytes: [UInt8]) -> String {
        var copy = bytes
        let text = encode(SecretBytes(consuming: &copy))
        return text.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The bytes the first `count` characters of `text` encode, in guarded memory; nil unless they are canonical
    /// unpadded base64.
    ///
    /// The corresponding C function is `sodium_base642bin`.
    package static func decode(_ text: borrowing SecretBytes, count: Int) -> SecretBytes? {
        _ = sodiumReady
        let count = min(count, text.count)
        // A length of 1 mod 4 is never a whole byte (libsodium refuses it); this only sizes the output.
        let out = SecretBytes(count: count / 4 * 3 + 2)
        var length = 0
        let status = out.withUnsafeMutableBytes { bytes in
            text.withUnsafeBytes { characters in
                sodium_base642bin(
                    bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count,
                    characters.baseAddress?.assumingMemoryBound(to: CChar.self), count, nil, &length, nil, variant)
            }
        }
        guard status == 0 else { return nil }
        return out.prefix(length)
    }

    /// The public bytes `text` encodes; nil unless it is canonical unpadded base64.
    package static func decode(_ text: String) -> [UInt8]? {
        var characters = Array(text.utf8)
        let count = characters.count
        guard let secret = decode(SecretBytes(consuming: &characters), count: count) else { return nil }
        return secret.withUnsafeBytes { Array($0) }
    }
}
