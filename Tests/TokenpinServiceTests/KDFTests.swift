import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinOpenPGP
import TokenpinSimulator

@testable import TokenpinService

/// The KDF-DO a host writes to switch the KDF on: iterated salted S2K, `hash`, 100,000 bytes, one salt per
/// secret, and the digests of the factory PINs (which become the card's PINs).
func kdfObject(hash: IteratedSaltedS2K.Hash) throws -> [UInt8] {
    let salts = (0..<3).map { _ in SecureRandom.bytes(8) }
    let count = 100_000
    func digest(_ pin: String, _ salt: [UInt8]) throws -> [UInt8] {
        var bytes = Array(pin.utf8)
        return try IteratedSaltedS2K.derive(pin: SecretBytes(consuming: &bytes), salt: salt, count: count, hash: hash)
            .withUnsafeBytes { Array($0) }
    }
    let countBytes: [UInt8] = [
        UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF),
    ]
    return [
        TLV(tag: 0x81, value: [0x03]), TLV(tag: 0x82, value: [hash == .sha256 ? 0x08 : 0x0A]),
        TLV(tag: 0x83, value: countBytes), TLV(tag: 0x84, value: salts[0]), TLV(tag: 0x85, value: salts[1]),
        TLV(tag: 0x86, value: salts[2]), TLV(tag: 0x87, value: try digest("123456", salts[0])),
        TLV(tag: 0x88, value: try digest("12345678", salts[2])),
    ].flatMap(\.encoded)
}

/// Switches the card's KDF on (admin PIN, PUT DATA F9); its PINs become the factory PINs, as digests.
func switchKDFOn(_ card: SimulatedCard, hash: IteratedSaltedS2K.Hash) throws {
    let connection = SimulatedCardConnection(card: card, sleep: { _ in })
    _ = try connection.send(CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x00, data: TokenpinOpenPGP.OpenPGPApplication.aid))
    let admin = try connection.send(CommandAPDU(ins: 0x20, p1: 0x00, p2: 0x83, data: Array(adminPIN.utf8)))
    #expect(admin.statusWord == .success)
    let put = try connection.send(CommandAPDU(ins: 0xDA, p1: 0x00, p2: 0xF9, data: kdfObject(hash: hash)))
    #expect(put.statusWord == .success)
    card.reset()
}

@Suite struct KDFTests {
    @Test(
        "KDF on: the card takes the digest, not the PIN, and tokenpin sends the digest",
        arguments: [
            IteratedSaltedS2K.Hash.sha256, .sha512,
        ])
    func bindAndVerify(hash: IteratedSaltedS2K.Hash) throws {
        let setup = try tokenSetup(bind: false)
        try generateDecryptionKey(setup.card, attributes: CardKeyAttributes.nistP256)
        try switchKDFOn(setup.card, hash: hash)
        _ = try setup.service.enableToken(ScriptedInteraction(["482916", cardPIN]))
        #expect(try setup.service.types()[1].enabled)
        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
        // A wrong card PIN counts on the card, and the PIN fallback still works.
        let report = try setup.service.verify(ScriptedInteraction(["654321", "482916"]))
        #expect(report.outcome == .verified(method: .pin))
        #expect(report.tokenFailure?.contains("wrong card PIN") == true)
        #expect(cardPINTries(setup.card) == 2)
        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
        #expect(cardPINTries(setup.card) == 3)
    }

    @Test("KDF on: change-pin and unblock with the admin PIN send digests")
    func changeAndUnblock() throws {
        let setup = try tokenSetup(bind: false)
        try generateDecryptionKey(setup.card, attributes: CardKeyAttributes.rsa(2048))
        try switchKDFOn(setup.card, hash: .sha256)
        try setup.service.changeCardPIN(ScriptedInteraction([cardPIN, "246810", "246810"]))
        // The new PIN works through the KDF (a bind proves it), the old one does not.
        #expect {
            _ = try setup.service.enableToken(ScriptedInteraction(["482916", cardPIN]))
        } throws: { ($0 as? ServiceError)?.code == "card-refused" }
        #expect(cardPINTries(setup.card) == 2)
        _ = try setup.service.enableToken(ScriptedInteraction(["482916", "246810"]))
        #expect(try setup.service.verify(ScriptedInteraction(["246810"])).outcome == .verified(method: .token))
        try setup.service.unblockCardPIN(ScriptedInteraction([adminPIN, "135790", "135790"]), admin: true)
        #expect(try setup.service.verify(ScriptedInteraction(["135790"])).outcome == .verified(method: .token))
    }

    @Test("KDF-DO parsing: off, on, and what tokenpin refuses")
    func parsing() throws {
        #expect(try KeyDerivation.parse([0x81, 0x01, 0x00]) == nil)
        #expect(try KeyDerivation.parse([]) == nil)
        let on = try #require(try KeyDerivation.parse(kdfObject(hash: .sha512)))
        #expect(on.hash == .sha512 && on.count == 100_000)
        let refused: [([UInt8], APDUError.Code)] = [
            ([0x81, 0x01, 0x02], .invalidStructure),  // an algorithm that is not iterated-salted S2K
            ([0x81, 0x01, 0x03, 0x82, 0x01, 0x09], .invalidStructure),  // a hash that is neither SHA-256 nor SHA-512
            ([0x81, 0x01, 0x03, 0x82, 0x01, 0x08], .invalidLength),  // no count, no salt
            (
                [0x81, 0x01, 0x03, 0x82, 0x01, 0x08, 0x83, 0x04, 0xFF, 0xFF, 0xFF, 0xFF, 0x84, 0x01, 0x00],
                .invalidLength
            ),
        ]
        for (bad, code) in refused {
            #expect("\(Hex.encode(bad))") { _ = try KeyDerivation.parse(bad) } throws: {
                ($0 as? APDUError)?.code == code
            }
        }
    }

    @Test("KDF-DO parsing: every prefix of a valid object fails cleanly or parses the same parameters")
    func prefixes() throws {
        let bytes = try kdfObject(hash: .sha256)
        let full = try #require(try KeyDerivation.parse(bytes))
        for cut in 1..<bytes.count {
            do {
                if let parsed = try KeyDerivation.parse(Array(bytes.prefix(cut))) {
                    #expect(parsed.hash == full.hash && parsed.count == full.count)
                }
            } catch {
                // A cut inside an object or before a required one: an APDUError, nothing else.
            }
        }
    }
}
