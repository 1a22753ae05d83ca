import Testing

@testable import TokenpinCore

@Suite struct PolicyTests {
    let policy = PINPolicy()

    @Test(arguments: [
        ("12345", PolicyRule.minLength),
        ("482916482916482916482916482916482", .maxLength),
        ("48291a", .charset),
        ("4829 6", .charset),
        ("112112", .repeated),  // also min-unique 2 < 3
        ("000000", .minUnique),
        ("121212", .minUnique),
        ("123123", .repeated),
        ("123456", .sequence),
        ("987654", .sequence),
        ("135791", .sequence),
        ("890123", .sequence),
        ("654321", .sequence),
        ("147258", .keypadPattern),
        ("159753", .keypadPattern),
        ("789456", .keypadPattern),
        ("852741", .keypadPattern),
        ("372273", .mirrored),
        ("251290", .date),  // DDMMYY
        ("122590", .date),  // MMDDYY
        ("901225", .date),  // YYMMDD
        ("071998", .date),  // MMYYYY
        ("199807", .date),  // YYYYMM
        ("5201314", .common),
        ("1314520", .common),
    ])
    func refusesGuessablePINs(candidate: String, rule: PolicyRule) {
        let found = policy.violation(for: pin(candidate))
        if rule == .repeated && candidate == "112112" {
            #expect(found == .minUnique || found == .repeated)
        } else {
            #expect(found == rule, "\(candidate)")
        }
    }

    @Test(arguments: ["482916", "739154", "915372", "4829167", "30485716"])
    func acceptsOrdinaryPINs(candidate: String) {
        #expect(policy.violation(for: pin(candidate)) == nil, "\(candidate)")
    }

    @Test func sameAsCurrentIsRefusedOnChange() {
        #expect(policy.violation(for: pin("482916"), replacing: pin("482916")) == .sameAsCurrent)
        #expect(policy.violation(for: pin("739154"), replacing: pin("482916")) == nil)
    }

    @Test func charsets() {
        var alnum = PINPolicy(charset: .alnum)
        #expect(alnum.violation(for: pin("x7k2m9")) == nil)
        #expect(alnum.violation(for: pin("x7k2m!")) == .charset)
        alnum.charset = .any
        #expect(alnum.violation(for: pin("ünïcø!")) == nil)
        #expect(alnum.violation(for: pin("abc\u{7}de")) == .charset)
        #expect(PINPolicy().violation(for: pin("４８２９１６")) == .charset)  // full-width digits
    }

    @Test func invalidUTF8IsACharsetViolation() {
        var bytes: [UInt8] = [0x34, 0x38, 0xFF, 0x39, 0x31, 0x36]
        #expect(PINPolicy(charset: .any).violation(for: PIN(SecretBytes(consuming: &bytes))) == .charset)
        var overlong: [UInt8] = [0xC0, 0xB4, 0x38, 0x32, 0x39, 0x31, 0x36]
        #expect(PINPolicy(charset: .any).violation(for: PIN(SecretBytes(consuming: &overlong))) == .charset)
        var cut: [UInt8] = [0x34, 0x38, 0x32, 0x39, 0x31, 0xE2, 0x82]
        #expect(PINPolicy(charset: .any).violation(for: PIN(SecretBytes(consuming: &cut))) == .charset)
    }

    @Test func lengthCountsCharactersNotBytes() {
        let policy = PINPolicy(minLength: 6, charset: .any)
        #expect(policy.violation(for: pin("äöüßéç")) == nil)
        #expect(policy.violation(for: pin("äöüßé")) == .minLength)
    }

    @Test func commonPasscodesAreRefusedInAnyCase() {
        #expect(PINPolicy(charset: .alnum).violation(for: pin("PassW0rd")) == .common)
    }

    @Test func minUnique() {
        #expect(PINPolicy(minUnique: 4).violation(for: pin("482482")) == .minUnique)
    }

    @Test func siteBlocklist() {
        var policy = PINPolicy()
        policy.siteBlocklist = ["482916".unicodeScalars.map(\.value)]
        #expect(policy.violation(for: pin("482916")) == .siteBlocklist)
        #expect(policy.violation(for: pin("739154")) == nil)
    }

    @Test func blocklistCanBeSwitchedOff() {
        #expect(PINPolicy(useBlocklist: false).violation(for: pin("123456")) == nil)
    }

    /// The blocklist should cover roughly 10% of 6-digit PINs (Markert et al. 2020).
    @Test func sixDigitCoverageIsAboutTenPercent() {
        let policy = PINPolicy(minUnique: 1)
        var blocked = 0
        var digits = [UInt32](repeating: 0x30, count: 6)
        for value in 0..<1_000_000 {
            var rest = value
            for index in stride(from: 5, through: 0, by: -1) {
                digits[index] = 0x30 + UInt32(rest % 10)
                rest /= 10
            }
            let rule = digits.withUnsafeBufferPointer { policy.violation(scalars: $0) }
            if rule != nil { blocked += 1 }
        }
        let share = Double(blocked) / 1_000_000
        print("6-digit blocklist coverage: \(blocked) PINs, \(share * 100)%")
        #expect(share > 0.08 && share < 0.14)
    }
}
