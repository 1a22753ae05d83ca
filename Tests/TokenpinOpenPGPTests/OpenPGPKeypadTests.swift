import Testing
import TokenpinAPDU
import TokenpinOpenPGP
import TokenpinSimulator
import TokenpinTestSupport

/// The OpenPGP admin PIN (PW3) on a keypad: the structure the session hands the reader and how it judges the answer.
@Suite("OpenPGP admin PIN on a keypad")
struct OpenPGPKeypadTests {
    @Test("VERIFY PW3 (00 20 00 83): variable length, 8 digits at least, the card's maximum; Lc for the reader to set")
    func adminStructure() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        let reader = AnsweringPinpad(card: 0x9000)
        #expect(try fixture.session.verify(.pw3, onKeypadOf: reader, minLength: 8, maxLength: 127) == nil)
        let pinpad = try #require(reader.pinpad)
        let expected = try PinpadStructure.verify(
            header: [0x00, 0x20, 0x00, 0x83], format: .openPGP(minLength: 8, maxLength: 127), pinpad: pinpad)
        #expect(reader.requests == [AnsweringPinpad.Request(modify: false, structure: expected)])
        #expect(expected[3] == 0x00, "no block: the PIN as typed")
        #expect(expected[5] == 16 && expected[6] == 8, "8 digits to the keypad's 16")
        #expect(Array(expected.suffix(5)) == [0x00, 0x20, 0x00, 0x83, 0x00])
    }

    @Test("a wrong admin PIN: 63 Cx gives the tries; 69 82 reads PW3's own counter from C4, not PW1's")
    func wrongAdminPIN() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        #expect(throws: OpenPGPError.wrongPIN(retriesLeft: 2)) {
            try fixture.session.verify(.pw3, pin: secret("00000000"))
        }
        #expect(throws: OpenPGPError.wrongPIN(retriesLeft: 1)) {
            try fixture.session.verify(.pw3, onKeypadOf: AnsweringPinpad(card: 0x63C1), minLength: 8, maxLength: 127)
        }
        #expect(throws: OpenPGPError.wrongPIN(retriesLeft: 2), "PW3's counter (PW1 has 3)") {
            try fixture.session.verify(.pw3, onKeypadOf: AnsweringPinpad(card: 0x6982), minLength: 8, maxLength: 127)
        }
        #expect(throws: OpenPGPError.blocked) {
            try fixture.session.verify(.pw3, onKeypadOf: AnsweringPinpad(card: 0x6983), minLength: 8, maxLength: 127)
        }
    }

    @Test(
        "Cancel and timeout on the keypad are refusals; the card saw nothing",
        arguments: [
            (PinpadAnswer.cancelled, PinpadRefusal.cancelled), (.timedOut, .timedOut),
        ])
    func refusals(_ answer: PinpadAnswer, _ refusal: PinpadRefusal) throws {
        let fixture = try Fixture()
        try fixture.session.select()
        let sent = fixture.connection.counter.count
        #expect(
            try fixture.session.verify(.pw3, onKeypadOf: AnsweringPinpad(answer), minLength: 8, maxLength: 127)
                == refusal)
        #expect(fixture.connection.counter.count == sent, "no APDU of the session's own")
    }

    @Test("a keypad of at most 6 digits cannot take an admin PIN: refused before the reader is asked")
    func keypadTooShort() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        let reader = AnsweringPinpad(.cancelled, minDigits: 4, maxDigits: 6)
        #expect {
            try fixture.session.verify(.pw3, onKeypadOf: reader, minLength: 8, maxLength: 127)
        } throws: { error in
            guard case .invalidArgument(let why) = error as? OpenPGPError else { return false }
            return why.contains("8 to 127") && why.contains("4 to 6")
        }
        #expect(reader.requests.isEmpty)
    }
}
