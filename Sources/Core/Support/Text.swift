extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (the whitespace a configuration line may carry).
    public func trimmingBlanks() -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

/// `value` with `decimals` digits after the point, rounded half away from zero, as `%.Nf` prints it.
///
/// For the figures `bench` prints; beyond ±9e15 (never a duration or a size here) it falls back to `description`.
public func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
    let places = max(0, min(decimals, 9))
    var scale: Double = 1
    for _ in 0..<places { scale *= 10 }
    let scaled = (abs(value) * scale).rounded(.toNearestOrAwayFromZero)
    guard scaled < 9e15 else { return value.description }
    let units = UInt64(scaled)
    let divisor = UInt64(scale)
    let whole = String(units / divisor)
    let sign = value < 0 && units > 0 ? "-" : ""
    guard places > 0 else { return sign + whole }
    let fraction = String(units % divisor)
    return sign + whole + "." + String(repeating: "0", count: places - fraction.count) + fraction
}

extension String {
    /// The text padded with spaces on the right to `width` characters (never cut).
    public func padded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

/// `\uXXXX` for a JSON escape: four lowercase hex digits.
public func unicodeEscape(_ value: UInt32) -> String {
    let hex = String(value, radix: 16)
    return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
}
