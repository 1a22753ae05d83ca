/// Hex helpers for traces, tests and tools.
public enum Hex {
    /// Formats bytes as upper-case hex pairs separated by `separator`.
    public static func encode(_ bytes: some Sequence<UInt8>, separator: String = "") -> String {
        let digits = Array("0123456789ABCDEF")
        var parts: [String] = []
        for byte in bytes {
            parts.append(String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]))
        }
        return parts.joined(separator: separator)
    }

    /// Parses hex digits, ignoring spaces, colons and dashes; returns nil for odd counts or other characters.
    public static func decode(_ text: String) -> [UInt8]? {
        var nibbles: [UInt8] = []
        for scalar in text.unicodeScalars {
            switch scalar {
            case "0"..."9": nibbles.append(UInt8(scalar.value - 48))
            case "a"..."f": nibbles.append(UInt8(scalar.value - 87))
            case "A"..."F": nibbles.append(UInt8(scalar.value - 55))
            case " ", ":", "-", "\n", "\t": continue
            default: return nil
            }
        }
        guard nibbles.count % 2 == 0 else { return nil }
        return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }
}
