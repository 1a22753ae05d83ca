/// The recovery key: 128 random bits, shown once at enrolment, that set a new PIN and clear the lock.
///
/// Written as 30 characters in six groups of five (`XXXXX-XXXXX-XXXXX-XXXXX-XXXXX-XXXXX`): 26 characters of
/// Crockford base32 (no I, L, O or U, so nothing reads as another character) carrying the 128 bits, then four
/// characters of checksum, so a mistyped key is caught before it counts as a wrong one.
public enum RecoveryKey {
    /// The number of random bytes.
    public static let byteCount = 16
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    static let dataCharacters = 26
    static let checksumCharacters = 4
    /// The length of the written form, with the dashes.
    public static let textLength = 35

    /// Why a typed recovery key could not be read.
    public enum ParseError: Error, Sendable, Equatable {
        /// Wrong number of characters.
        case malformed
        /// Well-formed but the checksum does not match: a typo.
        case checksumMismatch
        /// The right number of characters, one or more outside the alphabet: a typo the check cannot pass.
        case invalidCharacter
    }

    /// A new random recovery key.
    public static func generate() -> SecretBytes { SecureRandom.secret(byteCount) }

    /// The written form of `key`, as ASCII in guarded memory (print it straight from there).
    public static func format(_ key: borrowing SecretBytes) -> SecretBytes {
        let text = SecretBytes(count: textLength)
        let characters = SecretBytes(count: dataCharacters + checksumCharacters)
        key.withUnsafeBytes { raw in
            characters.withUnsafeMutableBytes { out in
                // 128 bits, five at a time, most significant first; the last character carries 3 bits.
                for index in 0..<dataCharacters {
                    var value = 0
                    for bit in 0..<5 {
                        let position = index * 5 + bit
                        let set = position < 128 ? (raw[position / 8] >> (7 - UInt8(position % 8))) & 1 : 0
                        value = value << 1 | Int(set)
                    }
                    out[index] = alphabet[value]
                }
                let sum = checksum(raw)
                for index in 0..<checksumCharacters { out[dataCharacters + index] = sum[index] }
            }
        }
        characters.withUnsafeBytes { chars in
            text.withUnsafeMutableBytes { out in
                var position = 0
                for (index, character) in chars.enumerated() {
                    if index > 0 && index % 5 == 0 {
                        out[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    out[position] = character
                    position += 1
                }
            }
        }
        return text
    }

    /// Reads a typed recovery key: case, dashes and spaces do not matter; `O` reads as `0`, `I` and `L` as `1`.
    public static func parse(_ typed: borrowing SecretBytes) throws(ParseError) -> SecretBytes {
        let values = SecretBytes(count: max(typed.count, 1))
        var outside = 0
        let count = typed.withUnsafeBytes { input in
            values.withUnsafeMutableBytes { out -> Int? in
                var count = 0
                for byte in input {
                    var upper = byte
                    if (0x61...0x7A).contains(upper) { upper -= 0x20 }
                    switch upper {
                    case UInt8(ascii: "-"), UInt8(ascii: " "), UInt8(ascii: "\t"): continue
                    case UInt8(ascii: "O"): upper = UInt8(ascii: "0")
                    case UInt8(ascii: "I"), UInt8(ascii: "L"): upper = UInt8(ascii: "1")
                    default: break
                    }
                    guard count < out.count else { return nil }
                    // A character outside the alphabet still takes its place, so that a key of the right
                    // shape with a typo is told apart from one of the wrong length.
                    if let value = alphabet.firstIndex(of: upper) { out[count] = UInt8(value) } else { outside += 1 }
                    count += 1
                }
                return count
            }
        }
        guard count == dataCharacters + checksumCharacters else { throw .malformed }
        guard outside == 0 else { throw .invalidCharacter }
        let key = SecretBytes(count: byteCount)
        let valid = values.withUnsafeBytes { v in
            key.withUnsafeMutableBytes { out -> Bool in
                for index in 0..<dataCharacters {
                    for bit in 0..<5 {
                        let position = index * 5 + bit
                        let set = (v[index] >> (4 - UInt8(bit))) & 1
                        if position < 128 {
                            out[position / 8] |= set << (7 - UInt8(position % 8))
                        } else if set != 0 {
                            return false
                        }
                    }
                }
                return true
            }
        }
        guard valid else { throw .malformed }
        let expected = key.withUnsafeBytes { checksum($0) }
        let matches = values.withUnsafeBytes { v in
            (0..<checksumCharacters).allSatisfy { alphabet[Int(v[dataCharacters + $0])] == expected[$0] }
        }
        guard matches else { throw .checksumMismatch }
        return key
    }

    /// Four characters (20 bits) of BLAKE2b over the key: detects typos, tells an attacker nothing useful.
    private static func checksum(_ key: UnsafeRawBufferPointer) -> [UInt8] {
        var input = Array("tokenpin/recovery-checksum".utf8)
        input += key
        defer { wipe(&input) }
        let digest = BLAKE2b.hash(input, length: 16)
        let bits = UInt32(digest[0]) << 12 | UInt32(digest[1]) << 4 | UInt32(digest[2]) >> 4
        return (0..<checksumCharacters).map { alphabet[Int((bits >> (15 - 5 * UInt32($0))) & 0x1F)] }
    }
}
