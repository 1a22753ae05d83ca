import Foundation
import Testing
import TokenpinAPDU
import TokenpinOpenPGP

/// What a key slot holds, as shown before tokenpin replaces a key: algorithm, fingerprint, creation date.
@Suite struct CardKeyDescriptionTests {
    @Test func aYubiKeysDecryptionKeyIsDescribedFromItsData() throws {
        let data = try ApplicationRelatedData(parsing: RecordedAnswers.yubiKey5)
        let key = CardKeyDescription(.decryption, in: data)
        #expect(key.isPresent)
        #expect(key.algorithm == .cv25519)
        #expect(key.created == Date(timeIntervalSince1970: 0x65A0_B3C0))
        #expect(
            key.description == "ECDH cv25519, fingerprint 4041 4243 4445 4647 4849 4A4B 4C4D 4E4F 5051 5253, "
                + "created 2024-01-12 03:36 UTC", "\(key)")
        #expect(data.generationTimes[.signature] == 0x5F5E_1000)
    }

    @Test func anEmptySlotIsNotPresent() throws {
        let data = try ApplicationRelatedData(parsing: RecordedAnswers.yubiKey5)
        let key = CardKeyDescription(.authentication, in: data)
        #expect(!key.isPresent, "key information 00, no fingerprint, no date")
        #expect(key.fingerprint == nil && key.created == nil)
    }
}
