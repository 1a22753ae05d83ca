import Testing
import TokenpinAPDU
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

/// What the PIV session hands a keypad reader and how it judges the answer, PIN by PIN.
@Suite("PIV PIN and PUK on a keypad")
struct PIVKeypadTests {
    /// One reader answer and what the session makes of it.
    struct Case: Sendable, CustomTestStringConvertible {
        var answer: PinpadAnswer
        /// nil: the card accepted; else the refusal the session returns.
        var refusal: PinpadRefusal?
        /// The error the session throws instead, when it throws.
        var error: PIVError?
        var testDescription: String { "\(answer)" }
    }

    static func card(_ word: UInt16, data: [UInt8] = []) -> PinpadAnswer {
        .card(ResponseAPDU(data: data, statusWord: StatusWord(rawValue: word)))
    }

    static let cases: [Case] = [
        Case(answer: .timedOut, refusal: .timedOut),
        Case(answer: .cancelled, refusal: .cancelled),
        Case(answer: .entriesDiffer, refusal: .entriesDiffer),
        Case(answer: .wrongLength, refusal: .wrongLength),
        Case(answer: card(0x9000)),
        Case(answer: card(0x63C2), error: .wrongPIN(retriesLeft: 2)),
        Case(answer: card(0x63C1), error: .wrongPIN(retriesLeft: 1)),
        Case(answer: card(0x6983), error: .blocked),
    ]

    @Test(
        "unblock: one MODIFY_PIN_DIRECT for RESET RETRY COUNTER 00 2C 00 80, the PUK's block at 0, the new PIN's at 8")
    func pukStructure() throws {
        let card = try Card()
        let reader = AnsweringPinpad(card: 0x9000)
        #expect(try card.session.unblockPIN(onKeypadOf: reader) == nil)
        let pinpad = try #require(reader.pinpad)
        let expected = try PinpadStructure.modify(header: [0x00, 0x2C, 0x00, 0x80], format: .piv, pinpad: pinpad)
        #expect(reader.requests == [AnsweringPinpad.Request(modify: true, structure: expected)])
        let structure = expected
        #expect(structure[3] == 0x08, "8-byte blocks")
        #expect(structure[5] == 0 && structure[6] == 8, "PUK at offset 0, the new PIN at 8")
        #expect(structure[7] == 8 && structure[8] == 6, "6 to 8 digits")
        #expect(structure[9] == 0x03, "the PUK, then the new PIN and its confirmation")
        #expect(Array(structure.suffix(21)) == [0x00, 0x2C, 0x00, 0x80, 0x10] + [UInt8](repeating: 0xFF, count: 16))
        #expect(card.trace.contains("> 00 2C 00 80 [on the keypad]"))
    }

    @Test(
        "the PUK entry's answers: the reader's own are refusals, the card's judged as for a typed PUK", arguments: cases
    )
    func pukAnswers(_ item: Case) throws {
        let card = try Card()
        let reader = AnsweringPinpad(item.answer)
        if let error = item.error {
            #expect(throws: error) { try card.session.unblockPIN(onKeypadOf: reader) }
        } else {
            #expect(try card.session.unblockPIN(onKeypadOf: reader) == item.refusal)
        }
        #expect(reader.requests.count == 1)
    }

    @Test("a card answer with data to a keypad PUK is malformed, not success")
    func answerWithData() throws {
        let card = try Card()
        #expect {
            try card.session.unblockPIN(onKeypadOf: AnsweringPinpad(card: 0x9000, data: [0x01]))
        } throws: { error in
            guard case .malformed(let detail) = error as? PIVError else { return false }
            return detail.code == .trailingBytes
        }
    }

    @Test("a keypad of at most 4 digits takes no PUK: refused before the reader is asked")
    func keypadTooShort() throws {
        let card = try Card()
        let reader = AnsweringPinpad(.cancelled, minDigits: 1, maxDigits: 4)
        #expect {
            try card.session.unblockPIN(onKeypadOf: reader)
        } throws: { error in
            guard case .invalidArgument(let why) = error as? PIVError else { return false }
            return why.contains("6 to 8")
        }
        #expect(reader.requests.isEmpty)
    }
}
