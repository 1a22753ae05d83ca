/// The characters a PIN may contain.
public enum PINCharset: String, Sendable, CaseIterable, Codable {
    /// `0`-`9` only.
    case digits
    /// ASCII letters and digits.
    case alnum
    /// Any printable Unicode text (no control characters).
    case any
}

/// A rule a new PIN broke; `rawValue` is the stable name shown to users and in JSON.
public enum PolicyRule: String, Sendable, CaseIterable {
    /// Fewer characters than `pin-min-length`.
    case minLength = "min-length"
    /// More characters than `pin-max-length`.
    case maxLength = "max-length"
    /// A character outside `pin-charset`, or text that is not valid UTF-8.
    case charset
    /// Fewer distinct characters than `pin-min-unique`.
    case minUnique = "min-unique"
    /// The new PIN equals the current one.
    case sameAsCurrent = "same-as-current"
    /// The two entries of the new PIN differ.
    case mismatch
    /// A short unit repeated (`111111`, `121212`, `123123`).
    case repeated
    /// A run up or down with a constant step (`123456`, `987654`, `135791`).
    case sequence
    /// Straight lines on a phone keypad (`147258`, `159753`, `2580`).
    case keypadPattern = "keypad-pattern"
    /// The second half mirrors the first (`123321`).
    case mirrored
    /// A calendar date (DDMMYY, MMDDYY, YYMMDD, MMYYYY, YYYYMM and the 4- and 8-digit forms).
    case date
    /// A year from 1900 to 2099.
    case year
    /// One of the most chosen PINs in published studies.
    case common
    /// An entry of the site blocklist (`pin-blocklist`).
    case siteBlocklist = "site-blocklist"
    /// The site's `pin-check` program refused it (its reason travels beside the rule).
    case siteCheck = "site-check"

    /// A sentence for the user.
    public var explanation: String {
        switch self {
        case .minLength: "the PIN is too short"
        case .maxLength: "the PIN is too long"
        case .charset: "the PIN contains characters the policy does not allow"
        case .minUnique: "the PIN has too few different characters"
        case .sameAsCurrent: "the new PIN is the same as the current one"
        case .mismatch: "the two entries do not match"
        case .repeated: "the PIN repeats a short pattern"
        case .sequence: "the PIN is a sequence"
        case .keypadPattern: "the PIN is a keypad pattern"
        case .mirrored: "the PIN mirrors itself"
        case .date: "the PIN looks like a date"
        case .year: "the PIN looks like a year"
        case .common: "the PIN is one of the most commonly chosen"
        case .siteBlocklist: "the PIN is on this site's blocklist"
        case .siteCheck: "the site's PIN check refused it"
        }
    }
}

/// The rules a new PIN must pass (the seeds' `FUIPasscodePolicy`).
///
/// Checks run on the PIN's bytes in guarded memory; the characters are decoded into guarded scratch memory,
/// never into a `String`.
public struct PINPolicy: Sendable, Equatable {
    /// The fewest characters; 6 by default, as NIST SP 800-63B asks of PINs.
    public var minLength: Int
    /// The most characters.
    public var maxLength: Int
    /// The characters allowed.
    public var charset: PINCharset
    /// The fewest distinct characters.
    public var minUnique: Int
    /// Whether the rule-based and common-PIN blocklist applies.
    public var useBlocklist: Bool
    /// Extra entries from the site's `pin-blocklist` file, as Unicode scalars.
    public var siteBlocklist: Set<[UInt32]>

    /// The defaults: 6 to 32 digits, at least 3 distinct, blocklist on.
    public init(
        minLength: Int = 6, maxLength: Int = 32, charset: PINCharset = .digits, minUnique: Int = 3,
        useBlocklist: Bool = true, siteBlocklist: Set<[UInt32]> = []
    ) {
        self.minLength = minLength
        self.maxLength = maxLength
        self.charset = charset
        self.minUnique = minUnique
        self.useBlocklist = useBlocklist
        self.siteBlocklist = siteBlocklist
    }

    /// The first rule `pin` breaks as a replacement for `current`, or nil when it passes.
    public func violation(for pin: borrowing PIN, replacing current: borrowing PIN) -> PolicyRule? {
        if pin.matches(current) { return .sameAsCurrent }
        return violation(for: pin)
    }

    /// The first rule `pin` breaks, or nil when it passes.
    public func violation(for pin: borrowing PIN) -> PolicyRule? {
        pin.secret.withUnsafeBytes { bytes in
            // Decode UTF-8 into guarded scratch memory of Unicode scalars.
            let scratch = SecretBytes(count: max(1, bytes.count) * 4)
            return scratch.withUnsafeMutableBytes { raw -> PolicyRule? in
                let scalars = raw.bindMemory(to: UInt32.self)
                guard let length = decodeUTF8(bytes, into: scalars) else { return .charset }
                return violation(scalars: UnsafeBufferPointer(rebasing: scalars[0..<length]))
            }
        }
    }

    /// Why `secret` cannot be a PIN under this policy at all, or nil when it could be one: empty, not UTF-8, a
    /// character outside `pin-charset`, or more characters than `pin-max-length`. Such a secret is never tried, so
    /// it costs no try (a password typed at the PIN prompt, a stray paste). Only these rules, not the ones a PIN
    /// chosen earlier may predate (length minimum, blocklist).
    public func impossibility(of secret: borrowing PIN) -> PolicyRule? {
        if secret.count == 0 { return .minLength }
        return secret.secret.withUnsafeBytes { bytes in
            let scratch = SecretBytes(count: max(1, bytes.count) * 4)
            return scratch.withUnsafeMutableBytes { raw -> PolicyRule? in
                let scalars = raw.bindMemory(to: UInt32.self)
                guard let length = decodeUTF8(bytes, into: scalars) else { return .charset }
                for scalar in scalars[0..<length] where !charset.allows(scalar) { return .charset }
                return length > maxLength ? .maxLength : nil
            }
        }
    }

    /// What a PIN is under this policy, for messages: "6 to 32 digits".
    public var shape: String {
        let kind =
            switch charset {
            case .digits: "digits"
            case .alnum: "letters and digits"
            case .any: "characters"
            }
        return "\(minLength) to \(maxLength) \(kind)"
    }

    /// The first rule the decoded characters break.
    func violation(scalars: UnsafeBufferPointer<UInt32>) -> PolicyRule? {
        for scalar in scalars where !charset.allows(scalar) { return .charset }
        if scalars.count < minLength { return .minLength }
        if scalars.count > maxLength { return .maxLength }
        if distinctCount(scalars) < minUnique { return .minUnique }
        if !siteBlocklist.isEmpty {
            var candidate = Array(scalars)
            defer { wipe(&candidate) }
            if siteBlocklist.contains(candidate) { return .siteBlocklist }
        }
        if useBlocklist, let rule = Blocklist.rule(matching: scalars) { return rule }
        return nil
    }

    private func distinctCount(_ scalars: UnsafeBufferPointer<UInt32>) -> Int {
        var distinct = 0
        for index in scalars.indices where !scalars[..<index].contains(scalars[index]) { distinct += 1 }
        return distinct
    }
}

extension PINCharset {
    func allows(_ scalar: UInt32) -> Bool {
        switch self {
        case .digits: return (0x30...0x39).contains(scalar)
        case .alnum:
            return (0x30...0x39).contains(scalar) || (0x41...0x5A).contains(scalar) || (0x61...0x7A).contains(scalar)
        case .any: return scalar >= 0x20 && scalar != 0x7F && !(0x80...0x9F).contains(scalar)
        }
    }
}

/// Decodes UTF-8 into `out`; returns the number of scalars, or nil for invalid UTF-8.
func decodeUTF8(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt32>) -> Int? {
    var index = 0
    var count = 0
    while index < bytes.count {
        let lead = bytes[index]
        var scalar: UInt32
        var extra: Int
        switch lead {
        case 0x00...0x7F:
            scalar = UInt32(lead)
            extra = 0
        case 0xC2...0xDF:
            scalar = UInt32(lead & 0x1F)
            extra = 1
        case 0xE0...0xEF:
            scalar = UInt32(lead & 0x0F)
            extra = 2
        case 0xF0...0xF4:
            scalar = UInt32(lead & 0x07)
            extra = 3
        default: return nil
        }
        guard index + extra < bytes.count || extra == 0 else { return nil }
        for offset in 0..<extra {
            let byte = bytes[index + 1 + offset]
            guard byte & 0xC0 == 0x80 else { return nil }
            scalar = scalar << 6 | UInt32(byte & 0x3F)
        }
        let minimum: UInt32 = [0, 0x80, 0x800, 0x10000][extra]
        guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { return nil }
        out[count] = scalar
        count += 1
        index += 1 + extra
    }
    return count
}
