/// The built-in blocklist of guessable PINs: rules plus a short list of the most chosen PINs.
///
/// Markert et al., "This PIN Can Be Easily Guessed" (IEEE S&P 2020), found that a blocklist of roughly 10% of
/// the 6-digit space makes users pick PINs an attacker with a few guesses rarely hits, while a much larger one
/// mostly annoys. The rules below (repeats, runs, keypad lines, mirrored halves, dates in the usual shapes,
/// years) cover about that share of 6-digit PINs; the common list adds the top choices the studies report
/// (Bonneau et al., FC 2012, for 4 digits; Markert et al. and Wang et al., 2017, for 6 digits).
enum Blocklist {
    /// The rule that `scalars` match, or nil.
    static func rule(matching scalars: UnsafeBufferPointer<UInt32>) -> PolicyRule? {
        if isRepeated(scalars) { return .repeated }
        if isSequence(scalars) { return .sequence }
        guard scalars.allSatisfy({ (0x30...0x39).contains($0) }) else { return isCommon(scalars) ? .common : nil }
        var digits = scalars.map { Int($0 - 0x30) }
        defer { wipe(&digits) }
        if isKeypadPattern(digits) { return .keypadPattern }
        if isMirrored(digits) { return .mirrored }
        if isYear(digits) { return .year }
        if isDate(digits) { return .date }
        return isCommon(scalars) ? .common : nil
    }

    /// A unit of at most half the length repeated throughout (`111111`, `121212`, `1231231`).
    static func isRepeated(_ s: UnsafeBufferPointer<UInt32>) -> Bool {
        guard s.count >= 2 else { return false }
        for period in 1...(s.count / 2) where (period..<s.count).allSatisfy({ s[$0] == s[$0 - period] }) {
            return true
        }
        return false
    }

    /// Digits with a constant step modulo 10 (`123456`, `890123`, `975319`), or letters in alphabet order.
    static func isSequence(_ s: UnsafeBufferPointer<UInt32>) -> Bool {
        guard s.count >= 3 else { return false }
        if s.allSatisfy({ (0x30...0x39).contains($0) }) {
            let step = (Int(s[1]) - Int(s[0]) + 10) % 10
            return step != 0 && (2..<s.count).allSatisfy { (Int(s[$0]) - Int(s[$0 - 1]) + 10) % 10 == step }
        }
        var lowered = s.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
        defer { wipe(&lowered) }
        for step in [1, -1] where (1..<lowered.count).allSatisfy({ Int(lowered[$0]) - Int(lowered[$0 - 1]) == step }) {
            return true
        }
        return false
    }

    /// Keys of a phone keypad: 1 2 3 / 4 5 6 / 7 8 9 / - 0 -, as (row, column).
    private static let keypad: [(Int, Int)] = [
        (3, 1), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2),
    ]

    /// The PIN splits into straight lines of three or more adjacent keys (rows, columns, diagonals, either
    /// direction): `147258`, `159753`, `789456`, `2580`, `3690`... ; or the whole PIN is one line.
    static func isKeypadPattern(_ digits: [Int]) -> Bool {
        guard digits.count >= 4 else { return false }
        return splitsIntoLines(digits[...])
    }

    private static func splitsIntoLines(_ digits: ArraySlice<Int>) -> Bool {
        if digits.isEmpty { return true }
        guard digits.count >= 3 else { return false }
        var end = digits.startIndex + 1
        // Extend a line while every step has the same unit direction.
        let first = keypad[digits[digits.startIndex]]
        let second = keypad[digits[end]]
        let dr = second.0 - first.0
        let dc = second.1 - first.1
        guard abs(dr) <= 1, abs(dc) <= 1, dr != 0 || dc != 0 else { return false }
        while end + 1 < digits.endIndex {
            let a = keypad[digits[end]]
            let b = keypad[digits[end + 1]]
            guard b.0 - a.0 == dr, b.1 - a.1 == dc else { break }
            end += 1
        }
        // Try every split point at or after three keys.
        var cut = end + 1
        while cut >= digits.startIndex + 3 {
            if splitsIntoLines(digits[cut...]) { return true }
            cut -= 1
        }
        return false
    }

    /// The second half is the first reversed (`123321`, `1234321`).
    static func isMirrored(_ digits: [Int]) -> Bool {
        digits.count >= 4 && digits == digits.reversed()
    }

    /// A 4-digit year from 1900 to 2099.
    static func isYear(_ digits: [Int]) -> Bool {
        digits.count == 4 && (1900...2099).contains(number(digits[...]))
    }

    /// A date in one of the shapes people use, by length: DDMM, MMDD (4); DDMMYY, MMDDYY, YYMMDD, MMYYYY,
    /// YYYYMM (6); DDMMYYYY, MMDDYYYY, YYYYMMDD (8). Four-digit years run from 1900 to 2099.
    static func isDate(_ d: [Int]) -> Bool {
        let n = d.count
        func two(_ i: Int) -> Int { d[i] * 10 + d[i + 1] }
        func four(_ i: Int) -> Int { number(d[i..<(i + 4)]) }
        switch n {
        case 4:
            return isDayMonth(day: two(0), month: two(2)) || isDayMonth(day: two(2), month: two(0))
        case 6:
            return isDayMonth(day: two(0), month: two(2)) || isDayMonth(day: two(2), month: two(0))
                || isDayMonth(day: two(4), month: two(2))
                || ((1...12).contains(two(0)) && (1900...2099).contains(four(2)))
                || ((1900...2099).contains(four(0)) && (1...12).contains(two(4)))
        case 8:
            return
                ((1900...2099).contains(four(4))
                && (isDayMonth(day: two(0), month: two(2)) || isDayMonth(day: two(2), month: two(0))))
                || ((1900...2099).contains(four(0)) && isDayMonth(day: two(6), month: two(4)))
        default:
            return false
        }
    }

    private static func isDayMonth(day: Int, month: Int) -> Bool {
        let days = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...12).contains(month) else { return false }
        return (1...days[month - 1]).contains(day)
    }

    private static func number(_ digits: ArraySlice<Int>) -> Int { digits.reduce(0) { $0 * 10 + $1 } }

    /// Among the most chosen PINs and passcodes in published studies; rules above already catch most others.
    static let common: [String] = [
        // 4 digits (Bonneau, Preibusch and Anderson, FC 2012: the top of the distribution).
        "1004", "2000", "6969", "1122", "1313", "4321", "2001", "1010", "2580", "0852",
        // 6 digits (Markert et al. 2020; Wang et al. 2017, Chinese and English datasets).
        "112233", "123321", "159753", "147258", "520520", "520131", "123654", "147852", "159357", "258369",
        "963852", "741852", "852456", "789456", "456123", "321654", "102030", "100200", "110110", "123789",
        "147369", "121314", "123465", "123457", "012345", "098765", "111222", "123000", "654123", "987456",
        "5201314", "1314520", "1234567", "12345678", "87654321", "11223344", "12341234", "01234567",
        // Alphanumeric passcodes.
        "password", "passw0rd", "qwerty", "qwertz", "azerty", "abc123", "letmein", "iloveyou", "admin",
        "welcome", "monkey", "dragon", "secret", "qwerty123", "1q2w3e", "1q2w3e4r", "zaq12wsx", "changeme",
    ]

    private static let commonScalars: Set<[UInt32]> = Set(common.map { $0.unicodeScalars.map(\.value) })

    static func isCommon(_ s: UnsafeBufferPointer<UInt32>) -> Bool {
        var lowered = s.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
        defer { wipe(&lowered) }
        return commonScalars.contains(lowered)
    }
}
