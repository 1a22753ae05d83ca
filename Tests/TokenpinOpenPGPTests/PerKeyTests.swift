import Testing

@testable import TokenpinOpenPGP

/// A value for some of the three key slots, read and written as a dictionary keyed by `KeyReference` would be.
@Suite struct PerKeyTests {
    @Test("set, read, replace and remove a key's value; the others stay as they were")
    func perKey() {
        var values: PerKey<UInt32> = [.decryption: 7]
        #expect(values[.decryption] == 7 && values[.signature] == nil && values[.authentication] == nil)
        #expect(values.count == 1)
        values[.signature] = 1
        values[.decryption] = 8
        #expect(values[.signature] == 1 && values[.decryption] == 8 && values.count == 2)
        values[.decryption] = nil
        #expect(values[.decryption] == nil && values[.signature] == 1 && values.count == 1)
        #expect(PerKey<UInt32>().count == 0)
    }

    @Test("equal when every key holds the same value; a literal's later entry for a key wins, as a merge would")
    func equality() {
        let both: PerKey<UInt32> = [.signature: 1, .authentication: 3]
        let reordered: PerKey<UInt32> = [.authentication: 3, .signature: 1]
        let one: PerKey<UInt32> = [.signature: 1]
        let other: PerKey<UInt32> = [.signature: 2]
        let elsewhere: PerKey<UInt32> = [.authentication: 1]
        let twice: PerKey<UInt32> = [.signature: 1, .signature: 2]
        #expect(both == reordered)
        #expect(one != other && one != elsewhere)
        #expect(twice[.signature] == 2)
    }
}
