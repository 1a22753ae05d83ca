import Foundation
import Testing
import TokenpinAPDU
import TokenpinOpenPGP
import TokenpinSimulator

@testable import TokenpinCore
@testable import TokenpinService

/// Decryption-key attributes (`C2`) for the card algorithms tokenpin binds to as they are.
enum CardKeyAttributes {
    static func rsa(_ bits: Int) -> [UInt8] { [0x01, UInt8(bits >> 8), UInt8(bits & 0xFF), 0x00, 0x11, 0x00] }
    static let nistP256: [UInt8] = [0x12] + Curve.nistP256.oid
    static let nistP521: [UInt8] = [0x12] + Curve.nistP521.oid
    static let brainpoolP384r1: [UInt8] = [0x12] + Curve.brainpoolP384r1.oid
}

/// Puts a decryption key with `attributes` on the card, as gpg's key-attr and generate would (admin PIN).
func generateDecryptionKey(_ card: SimulatedCard, attributes: [UInt8]) throws {
    let connection = SimulatedCardConnection(card: card, sleep: { _ in })
    let session = OpenPGPSession(connection: connection)
    try session.select()
    _ = try session.applicationRelatedData()
    var admin = Array(adminPIN.utf8)
    try session.verify(.pw3, pin: SecretBytes(consuming: &admin))
    try session.setAlgorithmAttributes(AlgorithmAttributes(parsing: attributes), for: .decryption)
    _ = try session.generateKey(for: .decryption)
    card.reset()
}

/// The card's decryption public key, read through a fresh session.
func decryptionPublicKey(_ card: SimulatedCard) throws -> CardPublicKey {
    let session = OpenPGPSession(connection: SimulatedCardConnection(card: card, sleep: { _ in }))
    try session.select()
    defer { card.reset() }
    return try session.publicKey(for: .decryption)
}

@Suite struct TokenAlgorithmTests {
    static let algorithms: [(String, [UInt8])] = [
        ("rsa2048", CardKeyAttributes.rsa(2048)), ("rsa3072", CardKeyAttributes.rsa(3072)),
        ("nistp256", CardKeyAttributes.nistP256), ("nistp521", CardKeyAttributes.nistP521),
        ("brainpoolP384r1", CardKeyAttributes.brainpoolP384r1),
    ]

    @Test("binds to the key on the card as it is, verifies, and re-seals", arguments: algorithms)
    func bindsAsItIs(name: String, attributes: [UInt8]) throws {
        let setup = try tokenSetup(bind: false)
        try generateDecryptionKey(setup.card, attributes: attributes)
        let keyBefore = try decryptionPublicKey(setup.card)
        #expect(try setup.service.listReaders().first?.usable == true)
        let script = ScriptedInteraction(["482916", cardPIN])
        #expect(try setup.service.enableToken(script).outcome == .verified(method: .pin))
        #expect(script.prompts.map(\.name) == ["pin", "card-pin"], "no admin PIN: nothing on the card changes")
        let record = try #require(try setup.service.store.load(user: "alice"))
        let binding = try #require(record.slot(.token)?.token)
        #expect(binding.algorithm == name)
        #expect(record.slot(.token)?.isWellFormed == true)
        #expect(try decryptionPublicKey(setup.card) == keyBefore, "the card's key is the one it had")

        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
        let after = try #require(try setup.service.store.load(user: "alice")?.slot(.token)?.token)
        #expect(after.ephemeralPublicKey != binding.ephemeralPublicKey, "the challenge changed after the verify")
        #expect(after.cardPublicKey == binding.cardPublicKey && after.algorithm == binding.algorithm)
        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
    }

    @Test("a wrong card PIN falls back to the PIN and counts on the card", arguments: algorithms.prefix(3))
    func wrongCardPIN(name: String, attributes: [UInt8]) throws {
        let setup = try tokenSetup(bind: false)
        try generateDecryptionKey(setup.card, attributes: attributes)
        _ = try setup.service.enableToken(ScriptedInteraction(["482916", cardPIN]))
        let script = ScriptedInteraction(["654321", "482916"])
        let report = try setup.service.verify(script)
        #expect(script.prompts.map(\.name) == ["card-pin", "pin"])
        #expect(report.outcome == .verified(method: .pin))
        #expect(report.tokenFailure?.contains("wrong card PIN") == true)
        #expect(cardPINTries(setup.card) == 2)
    }

    @Test("a captured card answer opens the slot at most once", arguments: algorithms.prefix(3))
    func replayRefused(name: String, attributes: [UInt8]) throws {
        let setup = try tappedSetup(decryptionKey: attributes)
        #expect(try setup.record().slot(.token)?.token?.algorithm == name)
        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
        for answer in setup.tap.answers {
            setup.tap.replay(answer)
            let report = try setup.service.verify(ScriptedInteraction(["000000"]), method: .token)
            guard case .tokenRejected(let reason) = report.outcome else {
                Issue.record("a captured \(name) answer verified: \(report.outcome)")
                continue
            }
            #expect(reason.contains("does not open the token slot"))
        }
        setup.tap.replay(nil)
        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
    }

    @Test("mode = both works with an RSA card")
    func modeBoth() throws {
        let setup = try tokenSetup(mode: .both, bind: false)
        try generateDecryptionKey(setup.card, attributes: CardKeyAttributes.rsa(2048))
        _ = try setup.service.enableToken(ScriptedInteraction(["482916", cardPIN]))
        #expect(try setup.service.verify(ScriptedInteraction(["482916", cardPIN])).outcome == .verified(method: .both))
        #expect(try setup.service.verify(ScriptedInteraction(["482916", cardPIN])).outcome == .verified(method: .both))
    }

    @Test("algorithms tokenpin cannot use are named, with the list of those it can")
    func unsupportedAlgorithms() throws {
        let secp256k1 = try AlgorithmAttributes(parsing: [0x12, 0x2B, 0x81, 0x04, 0x00, 0x0A])
        #expect(TokenKeyAlgorithm(attributes: secp256k1) == nil)
        #expect(TokenKeyAlgorithm(attributes: .rsa(modulusBits: 1024, exponentBits: 17, importFormat: 0)) == nil)
        #expect(TokenKeyAlgorithm(attributes: .ed25519) == nil)
        #expect(
            TokenKeyAlgorithm(attributes: .rsa(modulusBits: 4096, exponentBits: 32, importFormat: nil))
                == .rsa(bits: 4096))
        #expect(
            TokenKeyAlgorithm.supportedList
                == "cv25519, rsa2048, rsa3072, rsa4096, nistp256, nistp384, nistp521, brainpoolP256r1, brainpoolP384r1, brainpoolP512r1"
        )
        #expect(TokenKeyAlgorithm(bindingName: nil) == .cv25519)
        #expect(TokenKeyAlgorithm(bindingName: "rsa1024") == nil)
    }

    @Test("a card whose decryption slot is empty is refused before any PIN, naming its algorithm")
    func emptySlotRefused() throws {
        let setup = try tokenSetup(bind: false)
        let script = ScriptedInteraction(["482916"])
        #expect { _ = try setup.service.enableToken(script) } throws: { error in
            guard case .tokenUnavailable(let why) = error as? ServiceError else { return false }
            return why.contains("set to rsa2048 but holds no key") && why.contains("--generate-key")
        }
        #expect(script.prompts.isEmpty)
    }

    @Test("cv25519 bindings keep their old form: no algorithm, the same slot header and key context")
    func curve25519RecordsUnchanged() throws {
        let setup = try tokenSetup()
        let record = try #require(try setup.service.store.load(user: "alice"))
        let binding = try #require(record.slot(.token)?.token)
        #expect(binding.algorithm == nil && binding.cardPublicExponent == nil)
        let json = String(decoding: try JSONEncoder().encode(binding), as: UTF8.self)
        #expect(!json.contains("algorithm") && !json.contains("Exponent"))
        // The key context as it was before bindings could name an algorithm: label, salt, serial, both keys.
        let salt = [UInt8](repeating: 7, count: 16)
        var expected: [UInt8] = []
        for field in [
            Array("tokenpin/token/v1".utf8), salt, Array(binding.serial.utf8), [UInt8](binding.cardPublicKey),
            [UInt8](binding.ephemeralPublicKey),
        ] {
            expected += [UInt8(field.count >> 8), UInt8(field.count & 0xFF)] + field
        }
        #expect(TokenKeys.context(label: "tokenpin/token/v1", binding: binding, salt: salt) == expected)
    }
}
