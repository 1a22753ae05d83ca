import Testing
import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// The pinpad's parts of the protocol: `--no-pinpad` as the request's `pinpad: false`, the keypad events, and the
/// readers' `pinpad`, each read strictly.
@Suite("Pinpad in the daemon protocol")
struct PinpadProtocolTests {
    @Test("a request's pinpad field round-trips and takes only a boolean")
    func requestField() throws {
        var request = Request(.verify(.init()))
        request.pinpad = false
        let line = ClientMessage.request(request).line
        #expect(try ClientMessage.parse(Array(line.dropLast())) == .request(request))
        let text = Array("{\"v\":1,\"type\":\"request\",\"op\":\"verify\",\"pinpad\":\"off\"}".utf8)
        #expect(throws: ProtocolError.self) { try ClientMessage.parse(text) }
    }

    @Test("the keypad events round-trip; one with tries out of range or a field missing is not an event")
    func events() {
        let events: [Event] = [
            .keypadEntry(reader: "REINER SCT cyberJack", card: "YubiKey 5 12345678", triesLeft: 3),
            .keypadNotUsed(reader: "REINER SCT cyberJack", reason: "the card hashes its PIN (KDF-DO on)"),
        ]
        for event in events {
            #expect(Event(name: event.name, fields: event.protocolFields) == event)
        }
        let outOfRange = [
            JSONMember("reader", .text("r")), JSONMember("card", .text("c")), JSONMember("cardTriesLeft", .int(999)),
        ]
        #expect(Event(name: "keypadEntry", fields: outOfRange) == nil)
        #expect(Event(name: "keypadNotUsed", fields: [JSONMember("reader", .text("r"))]) == nil)
    }

    @Test("the admin PIN and the PUK on the keypad: a keypadEntry with pin; an unknown pin is no event")
    func credentialEntries() {
        let admin = Event.keypadCredentialEntry(
            reader: "REINER SCT cyberJack", card: "OpenPGP card 0005:12345678", credential: .adminPIN, triesLeft: 3)
        #expect(admin.name == "keypadEntry")
        #expect(admin.protocolFields.contains(JSONMember("pin", .text("admin-pin"))))
        #expect(Event(name: admin.name, fields: admin.protocolFields) == admin)
        // A PIV card outside YubiKey metadata does not tell its PUK's tries: no number on the wire.
        let puk = Event.keypadCredentialEntry(
            reader: "r", card: "PIV card", credential: .puk, triesLeft: cardTriesUntold)
        #expect(puk.protocolFields.contains(JSONMember("cardTriesLeft", .null)))
        #expect(Event(name: puk.name, fields: puk.protocolFields) == puk)
        // `pin` left out or `card-pin` is the card PIN's entry, as before the field.
        let card: [JSONMember] = [
            JSONMember("reader", .text("r")), JSONMember("card", .text("c")), JSONMember("cardTriesLeft", .int(2)),
        ]
        #expect(Event(name: "keypadEntry", fields: card) == .keypadEntry(reader: "r", card: "c", triesLeft: 2))
        #expect(
            Event(name: "keypadEntry", fields: card + [JSONMember("pin", .text("card-pin"))])
                == .keypadEntry(reader: "r", card: "c", triesLeft: 2))
        #expect(Event(name: "keypadEntry", fields: card + [JSONMember("pin", .text("reset-code"))]) == nil)
    }

    /// A PKCS#11 token gives no count: tokenpin's stand-in for it must never reach a client as a number (the PAM
    /// module said "255 tries left" for the card PIN prompt of such a token).
    @Test("a card that does not tell its tries is no number on the wire, in the card-pin prompt and the keypad event")
    func untoldTries() throws {
        let prompt = SecretPrompt.cardPIN(card: "SoftHSM token", triesLeft: cardTriesUntold).message
        let line = prompt.line
        let text = String(decoding: line, as: UTF8.self)
        #expect(!text.contains("remaining"), "\(text)")
        guard case .prompt(let name, let card, let tries) = try ServerMessage.parse(Array(line.dropLast())) else {
            Issue.record("not a prompt")
            return
        }
        #expect(tries == nil)
        #expect(
            SecretPrompt(name: name, card: card, triesLeft: tries)
                == .cardPIN(card: "SoftHSM token", triesLeft: cardTriesUntold))
        let event = Event.keypadEntry(reader: "SoftHSM slot", card: "SoftHSM token", triesLeft: cardTriesUntold)
        #expect(event.protocolFields.contains(JSONMember("cardTriesLeft", .null)))
        #expect(Event(name: event.name, fields: event.protocolFields) == event)
    }

    @Test("a reader's pinpad round-trips; digits outside 1-64 are a bad field")
    func readerPinpad() throws {
        var reader = ReaderInfo(name: "Pinpad Reader", cardPresent: true)
        reader.pinpad = ReaderPinpad(verify: true, modify: false, minDigits: 4, maxDigits: 16, ignored: nil)
        #expect(try ReaderInfo(protocolValue: reader.protocolValue) == reader)
        #expect(try ReaderInfo(protocolValue: ReaderInfo(name: "r", cardPresent: false).protocolValue).pinpad == nil)
        let hostile = JSONValue.object([
            JSONMember("verify", .bool(true)), JSONMember("modify", .bool(true)), JSONMember("minDigits", .int(0)),
            JSONMember("maxDigits", .int(16)),
        ])
        #expect(throws: ProtocolError.self) { try ReaderPinpad(protocolValue: hostile) }
    }
}
