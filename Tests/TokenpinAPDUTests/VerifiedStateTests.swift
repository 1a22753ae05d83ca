import Testing
import TokenpinAPDU

@Suite("VerifiedState: dropping a verified PIN without resetting the card")
struct VerifiedStateTests {
    static let ok: [UInt8] = [0x90, 0x00]
    static func verify(_ reference: UInt8) -> [UInt8] { [0x00, 0x20, 0x00, reference, 0x06] + Array("123456".utf8) }

    @Test("a successful VERIFY records its reference; a refused one does not")
    func recordsVerifiedReferences() {
        var state = VerifiedState()
        #expect(state.isEmpty)
        state.note(command: Self.verify(0x82), answer: [0x63, 0xC2])
        #expect(state.isEmpty)
        state.note(command: Self.verify(0x82), answer: Self.ok)
        state.note(command: Self.verify(0x81), answer: Self.ok)
        state.note(command: Self.verify(0x82), answer: Self.ok)
        #expect(state.references == [0x82, 0x81])
        #expect(state.clearingCommands == [[0x00, 0x20, 0xFF, 0x82], [0x00, 0x20, 0xFF, 0x81]])
        #expect(!state.needsReset)
    }

    @Test("the card answering 9000 to every FF VERIFY leaves nothing verified")
    func clearedByTheCard() {
        var state = VerifiedState()
        state.note(command: Self.verify(0x82), answer: Self.ok)
        state.note(command: Self.verify(0x83), answer: Self.ok)
        var sent: [[UInt8]] = []
        #expect(
            state.clear {
                sent.append($0)
                return Self.ok
            })
        #expect(sent == [[0x00, 0x20, 0xFF, 0x82], [0x00, 0x20, 0xFF, 0x83]])
        #expect(state.isEmpty)
    }

    @Test(
        "a card refusing the FF VERIFY (older YubiKey: 6B00, others 6A86, 6D00) still needs a reset",
        arguments: [[0x6B, 0x00], [0x6A, 0x86], [0x6D, 0x00], [0x67, 0x00], [0x90]] as [[UInt8]])
    func refusedNeedsReset(answer: [UInt8]) {
        var state = VerifiedState()
        state.note(command: Self.verify(0x82), answer: Self.ok)
        #expect(!state.clear { _ in answer })
        #expect(state.references == [0x82])
        #expect(!state.isEmpty)
    }

    @Test("a transport error while clearing still needs a reset")
    func transportErrorNeedsReset() {
        var state = VerifiedState()
        state.note(command: Self.verify(0x81), answer: Self.ok)
        #expect(!state.clear { _ throws(CardTransportError) in throw CardTransportError(.cardRemoved, "gone") })
        #expect(!state.isEmpty)
    }

    @Test(
        "CHANGE REFERENCE DATA and RESET RETRY COUNTER always need a reset, without sending anything",
        arguments: [0x24, 0x2C] as [UInt8])
    func changeAndUnblockNeedAReset(instruction: UInt8) {
        var state = VerifiedState()
        state.note(command: [0x00, instruction, 0x00, 0x81, 0x02, 0x31, 0x32], answer: Self.ok)
        #expect(state.needsReset)
        var sent = 0
        #expect(
            !state.clear { _ in
                sent += 1
                return Self.ok
            })
        #expect(sent == 0)
        state.forget()
        #expect(state.isEmpty)
    }

    @Test("a successful FF VERIFY sent by the caller removes the reference")
    func callerClearsItself() {
        var state = VerifiedState()
        state.note(command: Self.verify(0x82), answer: Self.ok)
        state.note(command: [0x00, 0x20, 0xFF, 0x82], answer: Self.ok)
        #expect(state.isEmpty)
    }
}
