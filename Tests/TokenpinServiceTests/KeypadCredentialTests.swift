import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// The PIV PUK's tries left, from YubiKey metadata (nil on a card without it).
private func pukTries(_ card: SimulatedCard) throws -> Int? {
    let token = try PIVToken.open(connection: SimulatedCardConnection(card: card, sleep: { _ in }), reader: "sim")
    defer { token.close() }
    return token.triesLeft(.puk)
}

/// Sets the OpenPGP card's Reset Code as an admin would: VERIFY PW3, PUT DATA `D3`.
private func setResetCode(_ card: SimulatedCard, _ code: String) throws {
    let connection = SimulatedCardConnection(card: card)
    defer { card.reset() }
    let answers = try [
        connection.send(CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01])),
        connection.send(CommandAPDU(ins: 0x20, p1: 0x00, p2: 0x83, data: Array(adminPIN.utf8))),
        connection.send(CommandAPDU(ins: 0xDA, p1: 0x00, p2: 0xD3, data: Array(code.utf8))),
    ]
    #expect(answers.allSatisfy { $0.statusWord == .success })
}

/// A PIV card (a P-256 key in 9D) behind a keypad, a PIN enrolled and the card bound with its PIN on the keypad.
private func pivKeypadSetup(
    _ profile: SimulatedProfile = .yubikey, _ keypad: Keypad,
    features: PinpadFeatures = PinpadFeatures(verifyPINDirect: 0x4233_0001, modifyPINDirect: 0x4233_0002)
) throws -> (PINService, PIVFixture) {
    let fixture = try PIVFixture(profile)
    try fixture.generate(.keyManagement, .eccP256)
    let base = makeService()
    var service = PINService(
        store: base.store, configuration: base.configuration, user: "alice", time: ManualTime(),
        cards: keypadReaders(fixture.card, keypad, features: features))
    try enrol(service)
    service.selection = CardSelection(application: .piv)
    keypad.set([.pin("123456")])
    #expect(try service.enableToken(ScriptedInteraction(["482916"])).outcome == .verified(method: .pin))
    return (service, fixture)
}

/// `cardRefused` whose reason contains every one of `words`.
private func refused(_ error: any Error, _ words: String...) -> Bool {
    guard case .cardRefused(let why) = error as? ServiceError else { return false }
    return words.allSatisfy { why.contains($0) }
}

@Suite("Admin PIN and PUK on the reader's keypad")
struct KeypadCredentialTests {
    static let openPGPCard = "OpenPGP card FFFE:00001111"

    // MARK: OpenPGP admin PIN (PW3)

    @Test("unblock --admin: the admin PIN on the keypad (no admin-pin prompt), the new card PIN at the keyboard")
    func adminUnblock() throws {
        let setup = try tokenSetup()
        let keypad = Keypad([.pin(adminPIN)])
        let interaction = ScriptedInteraction(["135790", "135790"])
        try keypadService(setup, keypad).unblockCardPIN(interaction, admin: true)
        #expect(interaction.prompts.map(\.name) == ["new-card-pin", "confirm-card-pin"])
        #expect(
            interaction.events.contains(
                .keypadCredentialEntry(
                    reader: "Pinpad Reader", card: Self.openPGPCard, credential: .adminPIN, triesLeft: 3)))
        #expect(keypad.left == 0)
        #expect(adminPINTries(setup.card) == 3)
        keypad.set([.pin("135790")])
        #expect(
            try keypadService(setup, keypad).verify(ScriptedInteraction([]), method: .token).outcome
                == .verified(method: .token))
    }

    @Test("a wrong admin PIN on the keypad counts on PW3, names the admin PIN's tries and changes no card PIN")
    func wrongAdminPIN() throws {
        let setup = try tokenSetup()
        let keypad = Keypad([.pin("87654321")])
        #expect {
            try keypadService(setup, keypad).unblockCardPIN(ScriptedInteraction(["135790", "135790"]), admin: true)
        } throws: { refused($0, "wrong admin PIN", "2 tries left") }
        #expect(adminPINTries(setup.card) == 2)
        #expect(cardPINTries(setup.card) == 3)
        keypad.set([.pin(cardPIN)])
        #expect(
            try keypadService(setup, keypad).verify(ScriptedInteraction([]), method: .token).outcome
                == .verified(method: .token), "the card PIN is the old one")
    }

    @Test(
        "Cancel (64 01) and a timeout (64 00) on the keypad: cancelled, PW3 not counted", arguments: [0x6401, 0x6400])
    func adminCancelled(word: UInt16) throws {
        let setup = try tokenSetup()
        #expect(throws: ServiceError.cancelled) {
            try keypadService(setup, Keypad([.reader(word)])).unblockCardPIN(
                ScriptedInteraction(["135790", "135790"]), admin: true)
        }
        #expect(adminPINTries(setup.card) == 3)
    }

    @Test("a keypad of at most 6 digits cannot take an admin PIN of 8: typed at the keyboard, saying why")
    func adminTooLongForKeypad() throws {
        let setup = try tokenSetup()
        let keypad = Keypad([.pin("000000")])
        let interaction = ScriptedInteraction([adminPIN, "135790", "135790"])
        try keypadService(setup, keypad, properties: PinpadProperties(minPINSize: 4, maxPINSize: 6))
            .unblockCardPIN(interaction, admin: true)
        #expect(interaction.prompts.first == .adminPIN(card: Self.openPGPCard, triesLeft: 3))
        #expect(keypad.left == 1)
        #expect(
            interaction.events.contains {
                if case .keypadNotUsed(_, let reason) = $0 { return reason.hasPrefix("the admin PIN: the card takes") }
                return false
            })
    }

    @Test("a card with KDF-DO on takes its admin PIN at the keyboard too")
    func adminKDF() throws {
        let setup = try tokenSetup()
        try switchKDFOn(setup.card, hash: .sha256)
        let keypad = Keypad([.pin(adminPIN)])
        let interaction = ScriptedInteraction([adminPIN, "135790", "135790"])
        try keypadService(setup, keypad).unblockCardPIN(interaction, admin: true)
        #expect(interaction.prompts.map(\.name) == ["admin-pin", "new-card-pin", "confirm-card-pin"])
        #expect(keypad.left == 1)
    }

    @Test("--generate-key: card PIN at the keyboard, then the admin PIN once on the keypad for PUT DATA and GENERATE")
    func generateOnKeypad() throws {
        let setup = try tokenSetup(bind: false)
        let keypad = Keypad([.pin(adminPIN)])
        let interaction = ScriptedInteraction(["482916", cardPIN])
        let report = try keypadService(setup, keypad).enableToken(interaction, generateKey: true, assumeYes: true)
        #expect(report.outcome == .verified(method: .pin))
        #expect(interaction.prompts.map(\.name) == ["pin", "card-pin"])
        #expect(keypad.left == 0)
        #expect(
            interaction.events.contains(
                .keypadCredentialEntry(
                    reader: "Pinpad Reader", card: Self.openPGPCard, credential: .adminPIN, triesLeft: 3)))
        keypad.set([.pin(cardPIN)])
        #expect(
            try keypadService(setup, keypad).verify(ScriptedInteraction([]), method: .token).outcome
                == .verified(method: .token))
    }

    @Test("--generate-key with a wrong or cancelled admin PIN on the keypad generates nothing")
    func generateRefused() throws {
        let setup = try tokenSetup(bind: false)
        let service = keypadService(setup, Keypad([.pin("87654321")]))
        #expect {
            _ = try service.enableToken(ScriptedInteraction(["482916", cardPIN]), generateKey: true, assumeYes: true)
        } throws: { refused($0, "wrong admin PIN, 2 tries left") }
        #expect(adminPINTries(setup.card) == 2)
        #expect(throws: ServiceError.cancelled) {
            _ = try keypadService(setup, Keypad([.reader(0x6401)])).enableToken(
                ScriptedInteraction(["482916", cardPIN]), generateKey: true, assumeYes: true)
        }
        #expect(adminPINTries(setup.card) == 2)
        // Still no key: a bind without --generate-key finds none.
        #expect { _ = try setup.service.enableToken(ScriptedInteraction(["482916"])) } throws: { error in
            guard case .tokenUnavailable(let why) = error as? ServiceError else { return false }
            return why.contains("holds no key")
        }
    }

    @Test("--generate-key over a key: the question comes before the keypad; refused, the keypad is never asked")
    func generateAsksFirst() throws {
        let setup = try tokenSetup(bind: false)
        try generateDecryptionKey(setup.card, attributes: CardKeyAttributes.nistP256)
        let keypad = Keypad([.pin(adminPIN)])
        let interaction = ScriptedInteraction(["482916", cardPIN], confirmations: [false])
        #expect(throws: ServiceError.cancelled) {
            _ = try keypadService(setup, keypad).enableToken(interaction, generateKey: true, assumeYes: false)
        }
        #expect(interaction.questions.count == 1)
        #expect(keypad.left == 1)
        #expect(!interaction.events.contains { $0.name == "keypadEntry" })
    }

    @Test("the Reset Code is typed at the keyboard even on a keypad reader, and the person is told why")
    func resetCodeAtKeyboard() throws {
        let setup = try tokenSetup()
        try setResetCode(setup.card, "87654321")
        let keypad = Keypad([.pin("87654321")])
        let interaction = ScriptedInteraction(["87654321", "135790", "135790"])
        try keypadService(setup, keypad).unblockCardPIN(interaction, admin: false)
        #expect(interaction.prompts.first?.name == "reset-code")
        #expect(keypad.left == 1)
        #expect(
            interaction.events.contains {
                if case .keypadNotUsed(_, let reason) = $0 { return reason.contains("Reset Code") }
                return false
            })
    }

    // MARK: PIV PUK

    @Test("unblock: PUK, new PIN and new PIN again on the keypad in one RESET RETRY COUNTER, nothing at the keyboard")
    func pukUnblock() throws {
        let keypad = Keypad()
        let (service, fixture) = try pivKeypadSetup(.yubikey, keypad)
        keypad.set([.pin("12345678"), .pin("135792"), .pin("135792")])
        let interaction = ScriptedInteraction([])
        try service.unblockCardPIN(interaction, admin: false)
        #expect(interaction.prompts.isEmpty)
        #expect(keypad.left == 0)
        #expect(
            interaction.events.contains(
                .keypadCredentialEntry(
                    reader: "Pinpad Reader", card: "YubiKey PIV \(0x00C0_FFEE)", credential: .puk, triesLeft: 3)))
        #expect(try pukTries(fixture.card) == 3)
        keypad.set([.pin("135792")])
        #expect(try service.verify(ScriptedInteraction([]), method: .token).outcome == .verified(method: .token))
    }

    @Test("a wrong PUK on the keypad counts on the PUK and names its tries; the PIN stays")
    func wrongPUK() throws {
        let keypad = Keypad()
        let (service, fixture) = try pivKeypadSetup(.yubikey, keypad)
        keypad.set([.pin("87654321"), .pin("135792"), .pin("135792")])
        #expect { try service.unblockCardPIN(ScriptedInteraction([]), admin: false) } throws: {
            refused($0, "wrong PUK", "2 tries left")
        }
        #expect(try pukTries(fixture.card) == 2)
        keypad.set([.pin("123456")])
        #expect(try service.verify(ScriptedInteraction([]), method: .token).outcome == .verified(method: .token))
    }

    @Test("Cancel, a timeout and new PINs that differ on the keypad: nothing counted, nothing changed")
    func pukRefusals() throws {
        let keypad = Keypad()
        let (service, fixture) = try pivKeypadSetup(.yubikey, keypad)
        for script: [KeypadEntry] in [[.reader(0x6401)], [.pin("12345678"), .reader(0x6400)]] {
            keypad.set(script)
            #expect(throws: ServiceError.cancelled) {
                try service.unblockCardPIN(ScriptedInteraction([]), admin: false)
            }
        }
        keypad.set([.pin("12345678"), .pin("135792"), .pin("135793")])
        #expect { try service.unblockCardPIN(ScriptedInteraction([]), admin: false) } throws: { error in
            guard case .cardPINRefused(let why) = error as? ServiceError else { return false }
            return why.contains("differ") && why.contains("nothing was changed")
        }
        #expect(try pukTries(fixture.card) == 3)
        keypad.set([.pin("123456")])
        #expect(try service.verify(ScriptedInteraction([]), method: .token).outcome == .verified(method: .token))
    }

    @Test("a PIV card without metadata: the keypad message gives no PUK tries")
    func pukTriesUntold() throws {
        let keypad = Keypad()
        let (service, _) = try pivKeypadSetup(.pivCard, keypad)
        keypad.set([.pin("12345678"), .pin("135792"), .pin("135792")])
        let interaction = ScriptedInteraction([])
        try service.unblockCardPIN(interaction, admin: false)
        #expect(
            interaction.events.contains {
                if case .keypadCredentialEntry(_, _, .puk, let tries) = $0 { return tries == cardTriesUntold }
                return false
            })
    }

    @Test("a reader that can only verify on its keypad: the PUK and new PIN at the keyboard, saying why")
    func pukWithoutModify() throws {
        let keypad = Keypad()
        let (service, _) = try pivKeypadSetup(
            .yubikey, keypad, features: PinpadFeatures(verifyPINDirect: 0x4233_0001))
        keypad.set([.pin("12345678")])
        let interaction = ScriptedInteraction(["12345678", "135792", "135792"])
        try service.unblockCardPIN(interaction, admin: false)
        #expect(interaction.prompts.map(\.name) == ["puk", "new-card-pin", "confirm-card-pin"])
        #expect(keypad.left == 1)
        #expect(
            interaction.events.contains {
                if case .keypadNotUsed(_, let reason) = $0 { return reason.contains("two PINs") }
                return false
            })
    }
}
