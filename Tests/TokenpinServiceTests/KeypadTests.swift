import Synchronization
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// What a scripted keypad does for one PIN request.
enum KeypadEntry: Sendable {
    /// The person types this PIN.
    case pin(String)
    /// The reader answers this itself and sends nothing to the card (`64 01` cancel, or an invented `90 00`).
    case reader(UInt16)
}

/// A keypad's script, shared by every connection to its reader; counts the requests it answered.
final class Keypad: Sendable {
    let entries: Mutex<[KeypadEntry]>
    init(_ entries: [KeypadEntry] = []) { self.entries = Mutex(entries) }
    func set(_ new: [KeypadEntry]) { entries.withLock { $0 = new } }
    var left: Int { entries.withLock { $0.count } }
    func next() -> KeypadEntry? { entries.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
}

/// A reader with a keypad in front of a simulated card: it completes the part 10 structure's command template with the
/// scripted entries (ASCII, padded to the structure's block size or not at all) and sends it to the card.
final class KeypadConnection: CardConnection, PinpadReader {
    let inner: SimulatedCardConnection
    let keypad: Keypad
    let readerName: String
    let pinpad: Pinpad?

    init(
        card: SimulatedCard, keypad: Keypad, reader: String, properties: PinpadProperties,
        features: PinpadFeatures = PinpadFeatures(verifyPINDirect: 0x4233_0001, modifyPINDirect: 0x4233_0002)
    ) {
        inner = SimulatedCardConnection(card: card, sleep: { _ in })
        self.keypad = keypad
        readerName = reader
        pinpad = Pinpad(reader: reader, features: features, properties: properties)
    }

    var atr: [UInt8] { inner.atr }
    var lengthCapabilities: LengthCapabilities {
        get { inner.lengthCapabilities }
        set { inner.lengthCapabilities = newValue }
    }
    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] { try inner.transmit(command) }

    func verifyPINDirect(_ structure: [UInt8]) throws(CardTransportError) -> PinpadAnswer {
        try complete(structure, header: 19, entries: 1)
    }

    func modifyPINDirect(_ structure: [UInt8]) throws(CardTransportError) -> PinpadAnswer {
        try complete(structure, header: 24, entries: 3)
    }

    private func complete(_ structure: [UInt8], header: Int, entries count: Int) throws(CardTransportError)
        -> PinpadAnswer
    {
        let template = Array(structure[header...])
        let block = Int(structure[3] & 0x0F)
        var pins: [String] = []
        for _ in 0..<count {
            switch keypad.next() {
            case .reader(let word): return PinpadAnswer(ResponseAPDU(statusWord: StatusWord(rawValue: word)))
            case .pin(let pin): pins.append(pin)
            case nil: return PinpadAnswer(ResponseAPDU(statusWord: StatusWord(rawValue: 0x6400)))
            }
        }
        if count == 3 {
            guard pins[1] == pins[2] else { return .entriesDiffer }
            pins.removeLast()
        }
        let data = pins.flatMap { pin -> [UInt8] in
            let digits = Array(pin.utf8)
            return block == 0 ? digits : digits + [UInt8](repeating: 0xFF, count: block - digits.count)
        }
        let command = Array(template[0..<4]) + [UInt8(data.count)] + data
        let answer = try inner.transmit(command)
        do {
            return PinpadAnswer(try ResponseAPDU(parsing: answer))
        } catch {
            throw CardTransportError(malformed: error)
        }
    }
}

/// Readers over `card` behind a keypad, as the virtual pinpad reader wires one.
func keypadReaders(
    _ card: SimulatedCard, _ keypad: Keypad,
    properties: PinpadProperties = PinpadProperties(minPINSize: 4, maxPINSize: 16),
    features: PinpadFeatures = PinpadFeatures(verifyPINDirect: 0x4233_0001, modifyPINDirect: 0x4233_0002)
) -> InProcessReaders {
    InProcessReaders([
        InProcessReaders.Reader(
            name: "Pinpad Reader", isPresent: { card.isPresent },
            connect: {
                KeypadConnection(
                    card: card, keypad: keypad, reader: "Pinpad Reader", properties: properties, features: features)
            },
            reset: { card.reset() })
    ])
}

/// The setup's service with the same record and card, behind a keypad; `pinpad` as the configuration says.
func keypadService(
    _ setup: TokenSetup, _ keypad: Keypad, pinpad: PinpadUse = .auto,
    properties: PinpadProperties = PinpadProperties(minPINSize: 4, maxPINSize: 16)
) -> PINService {
    var configuration = setup.service.configuration
    configuration.pinpad = pinpad
    return PINService(
        store: setup.service.store, configuration: configuration, user: "alice", time: ManualTime(),
        cards: keypadReaders(setup.card, keypad, properties: properties))
}

@Suite("Card PINs on the reader's keypad")
struct KeypadTests {
    @Test("verify by token takes the card PIN from the keypad: no prompt, a keypadEntry event with the tries left")
    func verifyOnKeypad() throws {
        let setup = try tokenSetup()
        let keypad = Keypad([.pin(cardPIN)])
        let interaction = ScriptedInteraction([])
        let report = try keypadService(setup, keypad).verify(interaction, method: .token)
        #expect(report.outcome == .verified(method: .token))
        #expect(interaction.prompts.isEmpty)
        #expect(
            interaction.events.contains(
                .keypadEntry(reader: "Pinpad Reader", card: "OpenPGP card FFFE:00001111", triesLeft: 3)))
        #expect(keypad.left == 0)
    }

    @Test("a wrong keypad PIN counts on the card and falls back to the PIN where allowed")
    func wrongPINOnKeypad() throws {
        let setup = try tokenSetup()
        let report = try keypadService(setup, Keypad([.pin("654321")])).verify(ScriptedInteraction(["482916"]))
        #expect(report.outcome == .verified(method: .pin))
        #expect(report.tokenFailure?.contains("wrong card PIN") == true)
        #expect(cardPINTries(setup.card) == 2)
    }

    @Test("Cancel and a timeout on the keypad end the verify as cancelled, with nothing counted and no PIN asked")
    func cancelledOnKeypad() throws {
        let setup = try tokenSetup()
        for word: UInt16 in [0x6401, 0x6400] {
            let interaction = ScriptedInteraction(["482916"])
            #expect(throws: ServiceError.cancelled) {
                try keypadService(setup, Keypad([.reader(word)])).verify(interaction)
            }
            #expect(interaction.unusedAnswers == 1, "the PIN was not asked")
            #expect(cardPINTries(setup.card) == 3)
        }
        #expect(try setup.service.status().remaining == 5, "nothing was counted on the PIN either")
    }

    @Test("a reader that answers 90 00 without the card opens nothing: the card's key refuses without its PIN")
    func inventedSuccess() throws {
        let setup = try tokenSetup()
        let report = try keypadService(setup, Keypad([.reader(0x9000)])).verify(ScriptedInteraction(["482916"]))
        #expect(report.outcome == .verified(method: .pin), "the token slot stayed shut; the PIN fallback opened")
        #expect(report.tokenFailure != nil)
        #expect(throws: ServiceError.self) {
            try keypadService(setup, Keypad([.reader(0x9000)])).verify(ScriptedInteraction([]), method: .token)
        }
    }

    @Test("pinpad = off: the card PIN at the keyboard, the keypad never asked")
    func pinpadOff() throws {
        let setup = try tokenSetup()
        let keypad = Keypad([.pin("000000")])
        let interaction = ScriptedInteraction([cardPIN])
        let report = try keypadService(setup, keypad, pinpad: .off).verify(interaction, method: .token)
        #expect(report.outcome == .verified(method: .token))
        #expect(interaction.prompts == [.cardPIN(card: "OpenPGP card FFFE:00001111", triesLeft: 3)])
        #expect(keypad.left == 1)
    }

    @Test("an OMNIKEY 3x21's claimed keypad is not used, and the person is told why")
    func quirkReader() throws {
        let setup = try tokenSetup()
        let keypad = Keypad([.pin("000000")])
        let interaction = ScriptedInteraction([cardPIN])
        let service = keypadService(
            setup, keypad, properties: PinpadProperties(vendorID: 0x076B, productID: 0x3031))
        #expect(try service.verify(interaction, method: .token).outcome == .verified(method: .token))
        #expect(keypad.left == 1)
        #expect(
            interaction.events.contains {
                if case .keypadNotUsed(_, let reason) = $0 { return reason.contains("OMNIKEY 3x21") }
                return false
            })
    }

    @Test("an OpenPGP card with KDF-DO on takes the card PIN at the keyboard, saying why")
    func kdfFallsBack() throws {
        let setup = try tokenSetup(bind: false)
        try generateDecryptionKey(setup.card, attributes: CardKeyAttributes.nistP256)
        try switchKDFOn(setup.card, hash: .sha256)
        let keypad = Keypad([.pin(cardPIN)])
        let interaction = ScriptedInteraction(["482916", cardPIN])
        _ = try keypadService(setup, keypad).enableToken(interaction)
        #expect(keypad.left == 1)
        #expect(interaction.prompts.contains(.cardPIN(card: "OpenPGP card FFFE:00001111", triesLeft: 3)))
        #expect(
            interaction.events.contains(
                .keypadNotUsed(
                    reader: "Pinpad Reader", reason: "the card hashes its PIN (KDF-DO on), which a keypad cannot do")))
    }

    @Test("token change-pin on the keypad: current, new, new again; entries that differ change nothing")
    func changeOnKeypad() throws {
        let setup = try tokenSetup()
        let keypad = Keypad([.pin(cardPIN), .pin("24681357"), .pin("24681357")])
        try keypadService(setup, keypad).changeCardPIN(ScriptedInteraction([]))
        #expect(keypad.left == 0)
        keypad.set([.pin("24681357"), .pin("11112222"), .pin("33334444")])
        #expect(throws: ServiceError.self) { try keypadService(setup, keypad).changeCardPIN(ScriptedInteraction([])) }
        keypad.set([.pin("24681357")])
        #expect(
            try keypadService(setup, keypad).verify(ScriptedInteraction([]), method: .token).outcome
                == .verified(method: .token))
    }
}
