/// The whole number `JSONDecoder` reads from a JSON number written with a fraction or an exponent (`1.0`, `1e2`), or
/// beyond 64 bits, for the record reader (`RecordJSONReader`).
///
/// The decoder takes the number's `Double`; when that is not a whole number that fits, it refuses. Below 2^53 it takes
/// that `Double` (so `1.0000000000000001` reads as 1). From 2^53 on it reads the decimal digits as a `Decimal` and
/// converts that to an integer, cutting any fraction off (`9007199254740993.5` reads as 9007199254740993) and
/// refusing a significand, trailing zeros removed, that does not fit 64 bits. Significands of more than 38 digits
/// (beyond a `Decimal`'s) are refused here; the decoder would round them.
enum RecordJSONNumber {
    /// The whole number `text` (a valid JSON number) reads as, or nil when the decoder refuses it as a 64-bit integer.
    static func whole(_ text: String) -> Int64? {
        guard let double = Double(text), let exact = Int64(exactly: double) else { return nil }
        if double.magnitude < 9_007_199_254_740_992 { return exact }
        return decimal(Array(text.utf8))
    }

    /// `bytes` as the decoder's `Decimal` and its conversion to an integer read it.
    private static func decimal(_ bytes: [UInt8]) -> Int64? {
        let negative = bytes.first == UInt8(ascii: "-")
        var digits: [UInt8] = []
        var exponent = 0
        var index = negative ? 1 : 0
        var inFraction = false
        while index < bytes.count, bytes[index] != UInt8(ascii: "e"), bytes[index] != UInt8(ascii: "E") {
            if bytes[index] == UInt8(ascii: ".") {
                inFraction = true
            } else {
                if !(digits.isEmpty && bytes[index] == UInt8(ascii: "0")) { digits.append(bytes[index] - 48) }
                if inFraction { exponent -= 1 }
            }
            index += 1
        }
        if index < bytes.count {
            guard let written = Int(String(decoding: bytes[(index + 1)...], as: UTF8.self)),
                abs(written) < 10_000
            else { return nil }
            exponent += written
        }
        while digits.last == 0 {
            digits.removeLast()
            exponent += 1
        }
        guard digits.count <= 38 else { return nil }
        var magnitude: UInt64 = 0
        for digit in digits {
            let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = shifted.addingReportingOverflow(UInt64(digit))
            guard !overflow, !carry else { return nil }
            magnitude = sum
        }
        for _ in 0..<max(0, -exponent) where magnitude > 0 { magnitude /= 10 }
        for _ in 0..<max(0, exponent) where magnitude > 0 {
            let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            magnitude = shifted
        }
        guard let signed = Int64(exactly: magnitude) else { return nil }
        return negative ? -signed : signed
    }
}
