/// Hex helpers for traces, tests and tools.
public enum Hex {
    /// Formats bytes as upper-case hex pairs separated by `separator`.
    ///
    /// Inlined into its callers, so each specialises it for its own sequence: unspecialised, the first calls of
    /// a process looked up the sequence's associated types at run time, about 200,000 instructions.
    @inlinable
    public static func encode(_ bytes: some Sequence<UInt8>, separator: String = "") -> String {
        encode(Array(bytes), separator: separator)
    }

    /// Formats bytes as upper-case hex pairs separated by `separator`.
    public static func encode(_ bytes: [UInt8], separator: String = "") -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        let separator = Array(separator.utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * (2 + separator.count))
        for (index, byte) in bytes.enumerated() {
            if index > 0 { text += separator }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
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
