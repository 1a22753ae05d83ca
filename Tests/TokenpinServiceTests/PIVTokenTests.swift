import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// A simulated card with PIV, set up as yubico-piv-tool would (default management key, a key generated in a
/// slot, its certificate written), and the token opened on it.
final class PIVFixture {
    let card: SimulatedCard
    let connection: SimulatedCardConnection

    init(_ profile: SimulatedProfile) throws {
        card = try SimulatedCard(stateFile: nil, serial: 0x00C0_FFEE, profile: profile)
        connection = SimulatedCardConnection(card: card, sleep: { _ in })
    }

    func open() throws(TokenCardError) -> PIVToken { try PIVToken.open(connection: connection, reader: "sim") }

    /// Generates a key in `slot` with the factory 3DES management key and writes a certificate naming it.
    @discardableResult
    func generate(_ slot: PIVSlot, _ algorithm: PIVAlgorithm) throws -> PIVPublicKey {
        let session = PIVSession(connection: connection)
        try session.select()
        try session.authenticate(managementKey: bytes(PIVToken.defaultManagementKey), algorithm: .tripleDES)
        let key = try session.generateKey(in: slot, algorithm: algorithm)
        try session.putObject(
            slot.certificateObject, value: TLV(tag: 0x70, value: certificate(for: key)).encoded + [0x71, 0x01, 0x00])
        return key
    }
}

private func bytes(_ value: [UInt8]) -> SecretBytes {
    var copy = value
    return SecretBytes(consuming: &copy)
}

private func text(_ value: String) -> SecretBytes { bytes(Array(value.utf8)) }

/// The error `body` threw, or nil.
private func caught<R: ~Copyable>(_ body: () throws(TokenCardError) -> R) -> TokenCardError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// A minimal X.509 certificate (DER) for `key`, subject `CN=tokenpin test`; its signature is not checked.
private func certificate(for key: PIVPublicKey) -> [UInt8] {
    switch key {
    case .ecc(let algorithm, let point):
        let curve: [UInt8] =
            algorithm == .eccP256 ? [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07] : [0x2B, 0x81, 0x04, 0x00, 0x22]
        return certificate(spki: ecSPKI(point, curveOID: curve))
    case .rsa(let modulus, let exponent):
        return certificate(spki: rsaSPKI(modulus: modulus, exponent: exponent))
    }
}

/// A binding to a card key with a fresh challenge, and the secret the card must answer.
private struct Bound: ~Copyable {
    let binding: TokenBinding
    let secret: SecretBytes

    init(_ token: PIVToken, _ key: TokenCardKey) throws {
        var binding = TokenBinding(
            serial: token.identity, cardPublicKey: Data(key.publicKey), ephemeralPublicKey: Data(),
            algorithm: key.algorithm.bindingName, cardPublicExponent: key.exponent.map { Data($0) },
            application: "piv", slot: key.slot)
        let fresh = try key.algorithm.freshChallenge(for: binding)
        binding.ephemeralPublicKey = Data(fresh.challenge)
        #expect(binding.problem == nil)
        self.binding = binding
        secret = fresh.secret.duplicate()
    }

    /// Whether `token` answers the challenge with the secret, given `pin`.
    func answered(by token: PIVToken, pin: String, algorithm: TokenKeyAlgorithm) throws -> Bool {
        let answer = try token.answer(pin: text(pin), binding: binding, algorithm: algorithm)
        return answer.isEqual(to: secret)
    }
}

@Suite("PIVToken")
struct PIVTokenTests {
    static let cases: [(SimulatedProfile, PIVAlgorithm, TokenKeyAlgorithm)] = [
        (.yubikey, .eccP256, .ecdh(.nistP256)), (.yubikey, .eccP384, .ecdh(.nistP384)),
        (.yubikey, .rsa2048, .rsa(bits: 2048)), (.pivCard, .eccP256, .ecdh(.nistP256)),
        (.pivCard, .eccP384, .ecdh(.nistP384)), (.pivCard, .rsa2048, .rsa(bits: 2048)),
    ]

    @Test(
        "the key in 9D binds (metadata on a YubiKey, the certificate on a PIV card) and answers its challenge",
        arguments: cases)
    func bindAndAnswer(profile: SimulatedProfile, algorithm: PIVAlgorithm, expected: TokenKeyAlgorithm) throws {
        let fixture = try PIVFixture(profile)
        let generated = try fixture.generate(.keyManagement, algorithm)
        let token = try fixture.open()
        #expect(token.unusableReason == nil)
        #expect(token.pinTriesLeft == 3)
        #expect(token.identity.hasPrefix(profile == .yubikey ? "piv-serial:" : "piv-guid:"))
        let key = try token.bindableKey(slot: nil)
        #expect(key.slot == "9d")
        #expect(key.algorithm == expected)
        switch generated {
        case .ecc(_, let point): #expect(key.publicKey == point)
        case .rsa(let modulus, let exponent):
            #expect(key.publicKey == Array(modulus.drop { $0 == 0 }))
            #expect(key.exponent == Array(exponent.drop { $0 == 0 }))
        }
        let bound = try Bound(token, key)
        #expect(try bound.answered(by: token, pin: "123456", algorithm: key.algorithm))
        token.close()
    }

    @Test("an empty slot, a signature slot and an unusable algorithm are unusable, each saying what is there")
    func unusableSlots() throws {
        let fixture = try PIVFixture(.yubikey)
        let token = try fixture.open()
        guard case .unusable(let empty) = caught({ () throws(TokenCardError) in try token.bindableKey(slot: nil) })
        else { throw Failure("empty 9d was not unusable") }
        #expect(empty == "slot 9d holds no key (or no certificate naming one)")
        #expect(token.unusableReason == empty)

        try fixture.generate(.signature, .eccP256)
        guard case .unusable(let signature) = caught({ () throws(TokenCardError) in try token.bindableKey(slot: "9c") })
        else { throw Failure("9c was not unusable") }
        #expect(
            signature
                == "slot 9c holds a P-256 key for signing or authentication; keys that agree secrets live in 9d or 82-95"
        )

        guard case .unusable(let bad) = caught({ () throws(TokenCardError) in try token.bindableKey(slot: "9b") })
        else { throw Failure("9b was not refused") }
        #expect(bad == "9b is not a PIV key slot (9a, 9c, 9d, 9e, 82-95)")

        // An Ed25519 key (YubiKey 5.7) in 9D: metadata names its algorithm.
        let scripted = ScriptedConnection([
            "9000", "6A82", "0507009000", "00C0FFEE9000", "63C3", "0101E0" + "02020201" + "030101" + "9000",
        ])
        let yubiKey57 = try PIVToken.open(connection: scripted, reader: "scripted")
        guard
            case .unusable(let ed25519) = caught({ () throws(TokenCardError) in try yubiKey57.bindableKey(slot: nil) })
        else { throw Failure("Ed25519 was not unusable") }
        #expect(ed25519 == "slot 9d holds a key tokenpin cannot use: Ed25519; supported: P-256, P-384 (ECDH), RSA 2048")
    }

    @Test("a wrong PIN maps to wrongPIN with the card's tries; a blocked PIN to blocked")
    func wrongPIN() throws {
        let fixture = try PIVFixture(.pivCard)
        try fixture.generate(.keyManagement, .eccP256)
        let token = try fixture.open()
        let key = try token.bindableKey(slot: nil)
        let binding = try Bound(token, key).binding
        for left in [2, 1, 0] {
            guard
                case .wrongPIN(let tries) = caught({ () throws(TokenCardError) in
                    try token.answer(pin: text("000000"), binding: binding, algorithm: key.algorithm)
                })
            else { throw Failure("no wrongPIN") }
            #expect(tries == left)
        }
        guard
            case .blocked = caught({ () throws(TokenCardError) in
                try token.answer(pin: text("123456"), binding: binding, algorithm: key.algorithm)
            })
        else { throw Failure("not blocked") }
        #expect(try fixture.open().pinTriesLeft == 0)
    }

    @Test("a PIN of 9 bytes is refused before any APDU: the card's counter is untouched")
    func longPIN() throws {
        let fixture = try PIVFixture(.pivCard)
        try fixture.generate(.keyManagement, .eccP256)
        let token = try fixture.open()
        let key = try token.bindableKey(slot: nil)
        let binding = try Bound(token, key).binding
        let before = fixture.card.processedCount
        guard
            case .refused(let why) = caught({ () throws(TokenCardError) in
                try token.answer(pin: text("123456789"), binding: binding, algorithm: key.algorithm)
            })
        else { throw Failure("a 9-byte PIN was not refused") }
        #expect(why == "a PIV PIN has 1 to 8 bytes, this one has 9; nothing was sent to the card")
        #expect(fixture.card.processedCount == before)
        #expect(try fixture.open().pinTriesLeft == 3)
    }

    @Test("a malformed GENERAL AUTHENTICATE answer is malformed")
    func malformedAnswer() throws {
        let guid = String(repeating: "11", count: 16)
        // SELECT, CHUID (a GUID), tries; then VERIFY and a 1-byte "shared secret".
        let scripted = ScriptedConnection(["9000", "53123410" + guid + "9000", "63C3", "9000", "7C038201FF9000"])
        let token = try PIVToken.open(connection: scripted, reader: "scripted")
        #expect(token.identity == "piv-guid:" + guid)
        #expect(token.label == "PIV card 1111…1111")
        let point = try EllipticCurveDH.generateKeyPair(on: .nistP256).publicPoint
        let binding = TokenBinding(
            serial: token.identity, cardPublicKey: Data(point), ephemeralPublicKey: Data(point),
            algorithm: "nistp256", application: "piv", slot: "9d")
        guard
            case .malformed(let why) = caught({ () throws(TokenCardError) in
                try token.answer(pin: text("123456"), binding: binding, algorithm: .ecdh(.nistP256))
            })
        else { throw Failure("not malformed") }
        #expect(why.contains("a shared secret of 1 bytes, expected 32"))
    }

    @Test("generate: the factory management key is refused without --yes; with it a P-256 key lands in 82")
    func generateIntoRetiredSlot() throws {
        let fixture = try PIVFixture(.yubikey)
        let token = try fixture.open()
        let factory = Hex.encode(PIVToken.defaultManagementKey)
        let refusedScript = ScriptedInteraction([factory])
        do {
            _ = try token.generateKey(slot: nil, assumeYes: false, refusedScript)
            Issue.record("the factory management key was accepted")
        } catch let error as ServiceError {
            guard case .usage(let why) = error else { throw Failure("not a usage error: \(error)") }
            #expect(why.contains("factory management key") && why.contains("--yes"))
        }
        #expect(refusedScript.prompts == [.managementKey(card: token.label)])
        let session = PIVSession(connection: fixture.connection)
        try session.select()
        #expect(throws: PIVError.referencedDataNotFound) { try session.metadata(for: .retired(1)!) }

        let key = try token.generateKey(slot: nil, assumeYes: true, ScriptedInteraction([factory]))
        #expect(key.slot == "82")
        #expect(key.algorithm == .ecdh(.nistP256))
        #expect(try token.bindableKey(slot: "82").publicKey == key.publicKey)
        let bound = try Bound(token, key)
        #expect(try bound.answered(by: token, pin: "123456", algorithm: key.algorithm))
        // The next one goes into the next empty slot.
        #expect(try token.generateKey(slot: nil, assumeYes: true, ScriptedInteraction([factory])).slot == "83")
    }

    @Test("generate into a populated slot shows its key and asks; a refusal writes nothing")
    func generateOverPopulatedSlot() throws {
        let fixture = try PIVFixture(.yubikey)
        let old = try fixture.generate(.keyManagement, .eccP384)
        // A site's own management key (SET MANAGEMENT KEY, 3DES): the factory one is refused without --yes.
        let site: [UInt8] = Array(repeating: 0x42, count: 24)
        let session = PIVSession(connection: fixture.connection)
        try session.select()
        try session.authenticate(managementKey: bytes(PIVToken.defaultManagementKey), algorithm: .tripleDES)
        _ = try fixture.connection.transmit([0x00, 0xFF, 0xFF, 0xFF, 27, 0x03, 0x9B, 24] + site)
        let token = try fixture.open()
        let script = ScriptedInteraction([Hex.encode(site)], confirmations: [false])
        #expect(throws: ServiceError.cancelled) {
            _ = try token.generateKey(slot: "9d", assumeYes: false, script)
        }
        #expect(script.questions.count == 1)
        #expect(script.questions.first?.contains("holds a key in slot 9d (P-384)") == true)
        // The management key is asked and checked on the card first; the question comes last, before anything is
        // written.
        #expect(script.prompts.map(\.name) == ["management-key"])
        guard case .ecc(_, let point) = old else { throw Failure("not EC") }
        #expect(try token.bindableKey(slot: "9d").publicKey == point)
        // A 3DES key of the wrong length is refused before the card.
        do {
            _ = try token.generateKey(slot: "9d", assumeYes: true, ScriptedInteraction(["0102"]))
            Issue.record("a 2-byte management key was taken")
        } catch let error as TokenCardError {
            guard case .refused(let why) = error else { throw Failure("not refused: \(error)") }
            #expect(why == "a 3DES management key is 48 hex digits (24 bytes); nothing was sent to the card")
        }
        #expect(try token.bindableKey(slot: "9d").publicKey == point)
    }

    @Test("change the PIN, then unblock a blocked PIN with the PUK (tries from metadata on a YubiKey)")
    func changeAndUnblock() throws {
        for profile in [SimulatedProfile.yubikey, .pivCard] {
            let fixture = try PIVFixture(profile)
            try fixture.generate(.keyManagement, .eccP256)
            let token = try fixture.open()
            #expect(token.unblockCredentials == [.puk])
            #expect(token.triesLeft(.puk) == (profile == .yubikey ? 3 : nil))
            try token.changePIN(current: text("123456"), new: text("24681357"))
            guard
                case .wrongPIN(let left) = caught({ () throws(TokenCardError) in
                    try token.changePIN(current: text("123456"), new: text("11111111"))
                })
            else { throw Failure("old PIN accepted") }
            #expect(left == 2)
            let key = try token.bindableKey(slot: nil)
            let bound = try Bound(token, key)
            let binding = bound.binding
            for _ in 0..<2 {
                _ = caught { () throws(TokenCardError) in
                    try token.changePIN(current: text("000000"), new: text("111111"))
                }
            }
            guard
                case .blocked = caught({ () throws(TokenCardError) in
                    try token.answer(pin: text("24681357"), binding: binding, algorithm: key.algorithm)
                })
            else { throw Failure("not blocked") }
            guard
                case .wrongPIN(let pukLeft) = caught({ () throws(TokenCardError) in
                    try token.unblock(with: .puk, secret: text("87654321"), newPIN: text("13572468"))
                })
            else { throw Failure("wrong PUK accepted") }
            #expect(pukLeft == 2)
            guard
                case .refused = caught({ () throws(TokenCardError) in
                    try token.unblock(with: .puk, secret: text("123456789"), newPIN: text("13572468"))
                })
            else { throw Failure("a 9-byte PUK was sent") }
            try token.unblock(with: .puk, secret: text("12345678"), newPIN: text("13572468"))
            #expect(try bound.answered(by: token, pin: "13572468", algorithm: key.algorithm))
            guard
                case .unusable = caught({ () throws(TokenCardError) in
                    try token.unblock(with: .resetCode, secret: text("12345678"), newPIN: text("13572468"))
                })
            else { throw Failure("a Reset Code was taken") }
        }
    }

    @Test("a card without PIV is applicationNotFound")
    func noPIV() throws {
        let fixture = try PIVFixture(.openpgp)
        guard case .applicationNotFound = caught({ () throws(TokenCardError) in try fixture.open() }) else {
            throw Failure("opened")
        }
    }

    @Test("the new prompts travel by name")
    func promptNames() {
        #expect(SecretPrompt.puk(card: "c", triesLeft: nil).name == "puk")
        #expect(SecretPrompt.managementKey(card: "c").name == "management-key")
    }
}

private struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The service with a PIV card in a reader: bound through PIV, verified with the card, its PIN managed.
@Suite("PIV through the service")
struct PIVServiceTests {
    struct Setup {
        var service: PINService
        var fixture: PIVFixture
    }

    fileprivate static func setup(
        _ profile: SimulatedProfile, mode: VerificationMode = .either, algorithm: PIVAlgorithm? = .eccP256
    ) throws -> (PINService, PIVFixture) {
        let fixture = try PIVFixture(profile)
        if let algorithm { try fixture.generate(.keyManagement, algorithm) }
        var service = makeService()
        var configuration = service.configuration
        configuration.mode = mode
        service = PINService(
            store: service.store, configuration: configuration, user: "alice", time: ManualTime(),
            cards: readers([("Reader P", fixture.card)]))
        try enrol(service)
        service.selection = CardSelection(application: .piv)
        return (service, fixture)
    }

    @Test(
        "bind to the 9D key, verify with the card, fall back on a wrong card PIN, pulled card falls back",
        arguments: [SimulatedProfile.pivCard, .yubikey])
    func bindAndVerify(profile: SimulatedProfile) throws {
        let (service, fixture) = try Self.setup(profile)
        let bind = ScriptedInteraction(["482916", "123456"])
        #expect(try service.enableToken(bind).outcome == .verified(method: .pin))
        #expect(bind.prompts.map(\.name) == ["pin", "card-pin"])
        let record = try #require(try service.store.load(user: "alice"))
        let binding = try #require(record.slot(.token)?.token)
        #expect(binding.application == "piv")
        #expect(binding.slot == "9d")
        #expect(binding.algorithm == "nistp256")
        #expect(binding.serial.hasPrefix(profile == .yubikey ? "piv-serial:" : "piv-guid:"))

        #expect(try service.verify(ScriptedInteraction(["123456"])).outcome == .verified(method: .token))
        // The challenge rotated after the verify, and still opens.
        let rotated = try #require(try service.store.load(user: "alice")?.slot(.token)?.token)
        #expect(rotated.ephemeralPublicKey != binding.ephemeralPublicKey)
        #expect(rotated.slot == "9d")
        #expect(try service.verify(ScriptedInteraction(["123456"])).outcome == .verified(method: .token))

        let wrong = try service.verify(ScriptedInteraction(["654321", "482916"]))
        #expect(wrong.outcome == .verified(method: .pin))
        #expect(wrong.tokenFailure?.contains("2 tries left") == true)

        // A PIN the card cannot take costs no card try and falls back.
        let long = try service.verify(ScriptedInteraction(["123456789", "482916"]))
        #expect(long.outcome == .verified(method: .pin))
        #expect(long.tokenFailure?.contains("1 to 8 bytes") == true)
        #expect(try PIVToken.open(connection: fixture.connection, reader: "sim").pinTriesLeft == 2)

        fixture.card.remove()
        let pulled = ScriptedInteraction(["482916"])
        #expect(try service.verify(pulled).outcome == .verified(method: .pin))
        #expect(pulled.prompts == [.pin])
    }

    @Test("change the card PIN, block it, unblock with the PUK")
    func changeAndUnblock() throws {
        let (service, _) = try Self.setup(.yubikey)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        let change = ScriptedInteraction(["123456", "246813", "246813"])
        try service.changeCardPIN(change)
        #expect(change.prompts.map(\.name) == ["card-pin", "new-card-pin", "confirm-card-pin"])
        #expect(try service.verify(ScriptedInteraction(["246813"])).outcome == .verified(method: .token))
        for _ in 0..<3 { _ = try service.verify(ScriptedInteraction(["000000", "482916"])) }
        let unblock = ScriptedInteraction(["12345678", "135792", "135792"])
        try service.unblockCardPIN(unblock, admin: false)
        #expect(unblock.prompts.first == .puk(card: "YubiKey PIV \(0x00C0_FFEE)", triesLeft: 3))
        #expect(try service.verify(ScriptedInteraction(["135792"])).outcome == .verified(method: .token))
    }

    @Test("a PIV card's PUK tries are unknown: the prompt says none, and unblocking still works")
    func unblockWithoutMetadata() throws {
        let (service, _) = try Self.setup(.pivCard)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        let unblock = ScriptedInteraction(["12345678", "135792", "135792"])
        try service.unblockCardPIN(unblock, admin: false)
        guard case .puk(_, let tries) = unblock.prompts.first else { throw Failure("no PUK prompt") }
        #expect(tries == nil)
        #expect(try service.verify(ScriptedInteraction(["135792"])).outcome == .verified(method: .token))
    }

    @Test("mode both: the PIN and the PIV card together")
    func bothMode() throws {
        let (service, _) = try Self.setup(.pivCard, mode: .both, algorithm: .rsa2048)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        let record = try #require(try service.store.load(user: "alice"))
        #expect(record.slots.map(\.kind) == [.recovery, .composite])
        #expect(try service.verify(ScriptedInteraction(["482916", "123456"])).outcome == .verified(method: .both))
    }

    @Test("--generate-key with the factory management key and --yes binds a new key in 82")
    func generate() throws {
        let (service, _) = try Self.setup(.yubikey, algorithm: nil)
        let script = ScriptedInteraction(["482916", "123456", Hex.encode(PIVToken.defaultManagementKey)])
        _ = try service.enableToken(script, generateKey: true, assumeYes: true)
        #expect(script.prompts.map(\.name) == ["pin", "card-pin", "management-key"])
        #expect(try service.store.load(user: "alice")?.slot(.token)?.token?.slot == "82")
        #expect(try service.verify(ScriptedInteraction(["123456"])).outcome == .verified(method: .token))
    }
}

extension PIVServiceTests {
    @Test("status finds a YubiKey bound through PIV and reads its PIV PIN's tries")
    func statusOfAPIVBoundYubiKey() throws {
        var (service, _) = try Self.setup(.yubikey)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        _ = try service.verify(ScriptedInteraction(["000000", "482916"]))
        service.selection = CardSelection()
        let binding = try #require(try service.boundCard())
        let status = service.tokenStatus(binding: binding)
        #expect(status.matchingReader == "Reader P")
        #expect(status.cardPINTriesLeft == 2)
    }
}

extension PIVServiceTests {
    @Test(
        "APDUs per PIV token verify: 5 for ECDH on a card named by its GUID (RSA 2048: 7, a chained command and GET RESPONSE), 7 for a YubiKey without a CHUID",
        arguments: [
            (SimulatedProfile.pivCard, PIVAlgorithm.eccP256, 5), (.pivCard, .rsa2048, 7), (.yubikey, .eccP256, 7),
        ])
    func apdusPerVerify(profile: SimulatedProfile, algorithm: PIVAlgorithm, expected: Int) throws {
        let (service, fixture) = try Self.setup(profile, algorithm: algorithm)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        let before = fixture.card.processedCount
        #expect(try service.verify(ScriptedInteraction(["123456"])).outcome == .verified(method: .token))
        // SELECT, GET DATA CHUID, [GET VERSION, GET SERIAL,] VERIFY (tries), VERIFY, GENERAL AUTHENTICATE (RSA: 2
        // parts, and GET RESPONSE for the 256-byte answer).
        #expect(fixture.card.processedCount - before == expected)
    }
}

extension PIVServiceTests {
    @Test("a YubiKey bound through OpenPGP in one record and through PIV in another: each verifies, in any order")
    func bothApplicationsOfOneCard() throws {
        let fixture = try PIVFixture(.yubikey)
        try fixture.generate(.keyManagement, .eccP256)
        func service(_ application: TokenApplicationKind) throws -> PINService {
            let base = makeService()
            var service = PINService(
                store: base.store, configuration: base.configuration, user: "alice", time: ManualTime(),
                cards: readers([("Reader Y", fixture.card)]))
            try enrol(service)
            service.selection = CardSelection(application: application)
            return service
        }
        let openpgp = try service(.openpgp)
        _ = try openpgp.enableToken(
            ScriptedInteraction(["482916", "123456", adminPIN]), generateKey: true, assumeYes: true)
        let piv = try service(.piv)
        _ = try piv.enableToken(ScriptedInteraction(["482916", "123456"]))
        let openpgpBinding = try #require(try openpgp.store.load(user: "alice")?.slot(.token)?.token)
        let pivBinding = try #require(try piv.store.load(user: "alice")?.slot(.token)?.token)
        #expect(openpgpBinding.application == nil)
        #expect(pivBinding.application == "piv")
        for service in [openpgp, piv, piv, openpgp] {
            var unscoped = service
            unscoped.selection = CardSelection()  // the binding says which application to use
            #expect(try unscoped.verify(ScriptedInteraction(["123456"])).outcome == .verified(method: .token))
        }
    }
}

extension PIVTokenTests {
    @Test("a card with no key in 9D but one in a retired slot says which slot to name")
    func unusableReasonPointsAtARetiredKey() throws {
        let fixture = try PIVFixture(.yubikey)
        try fixture.generate(.retired(3)!, .eccP384)
        let token = try fixture.open()
        #expect(
            token.unusableReason
                == "slot 9d holds no key (or no certificate naming one); slot 84 holds a nistp384 key "
                + "(bind it with --slot 84)")
        let empty = try PIVFixture(.pivCard).open()
        #expect(empty.unusableReason == "slot 9d holds no key (or no certificate naming one)")
    }
}
