import FoundationEssentials

/// Dates in records: ISO 8601 in UTC to the second (`2027-01-15T08:00:00Z`), exactly as `JSONEncoder` and
/// `JSONDecoder` write and read them with `.iso8601`, computed by calendar arithmetic.
///
/// Foundation's ISO 8601 style builds a Gregorian calendar and looks up the time zone (the environment,
/// `/etc/localtime`) the first time a process uses it: about a third of a millisecond of every `tokenpin verify`,
/// which reads and writes one record. Here the form the store writes is converted directly; any other string
/// (an offset, fractions, a hand-edited record) and any year before 1600 or after 9999 go to Foundation as
/// before.
enum RecordDate {
    /// How the store encodes dates.
    static let encoding: JSONEncoder.DateEncodingStrategy = .custom { date, encoder in
        var container = encoder.singleValueContainer()
        try container.encode(string(from: date))
    }

    /// How the store decodes dates.
    static let decoding: JSONDecoder.DateDecodingStrategy = .custom { decoder in
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let date = date(from: text) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: "Expected date string to be ISO8601-formatted."))
        }
        return date
    }

    /// `date` as `YYYY-MM-DDTHH:MM:SSZ`, the seconds rounded down, as Foundation's `.iso8601` writes it.
    static func string(from date: Date) -> String {
        guard let total = keptSeconds(date) else { return date.formatted(.iso8601) }
        let days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
        let secondOfDay = total - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20)
        func append(_ value: Int, digits: Int) {
            var divisor = 1
            for _ in 1..<digits { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        append(year, digits: 4)
        bytes.append(UInt8(ascii: "-"))
        append(month, digits: 2)
        bytes.append(UInt8(ascii: "-"))
        append(day, digits: 2)
        bytes.append(UInt8(ascii: "T"))
        append(secondOfDay / 3600, digits: 2)
        bytes.append(UInt8(ascii: ":"))
        append(secondOfDay % 3600 / 60, digits: 2)
        bytes.append(UInt8(ascii: ":"))
        append(secondOfDay % 60, digits: 2)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `date` as the store keeps it: the seconds rounded down, as `string(from:)` writes them and `date(from:)` reads
    /// them back. Nil for a date written another way (outside the years converted here), which is not kept exactly.
    static func stored(_ date: Date) -> Date? {
        keptSeconds(date).map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// The whole seconds since 1970 that `string(from:)` writes for `date` as `YYYY-MM-DDTHH:MM:SSZ` (rounded down);
    /// nil for a date it hands to Foundation instead (not finite, too far out, or outside `gregorianYears`).
    private static func keptSeconds(_ date: Date) -> Int? {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite, abs(seconds) < 1e15 else { return nil }
        let total = Int(seconds)
        let days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
        return gregorianYears.contains(civil(fromDays: days).year) ? total : nil
    }

    /// The date `text` names: `YYYY-MM-DDTHH:MM:SSZ` converted here, anything else as Foundation's `.iso8601`
    /// reads it; nil when it names none.
    static func date(from text: String) -> Date? {
        if let date = utcSeconds(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }

    /// The years converted here: Foundation's calendar is Julian before the Gregorian reform (1582).
    static let gregorianYears = 1600...9999

    /// `YYYY-MM-DDTHH:MM:SSZ` with a valid date (`gregorianYears`) and time (no leap second), else nil.
    private static func utcSeconds(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            bytes[19] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            gregorianYears.contains(year), (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 60
        else { return nil }
        let days = self.days(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a date in the proleptic Gregorian calendar.
    private static func days(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date `days` after 1970-01-01.
    private static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
