import Testing
import TokenpinAPDU

@testable import TokenpinSimulator

/// Fault injection: vanish, slow, malformed, chosen status word.
@Suite("Fault injection")
struct FaultTests {
    @Test("vanish: the connection throws cardRemoved until the card is inserted again")
    func vanish() throws {
        let harness = try Harness()
        harness.card.faults = CardFaults(rules: [
            .init(instruction: CardInstruction.verify, fault: .vanish(afterProcessing: false))
        ])
        let error = #expect(throws: CardTransportError.self) { try harness.verify(0x82, "000000") }
        #expect(error == CardTransportError(.cardRemoved, "the simulated card was removed from the reader"))
        #expect(!harness.card.isPresent)
        #expect { try harness.getData(0x4F) } throws: { ($0 as? CardTransportError)?.kind == .cardRemoved }
        harness.card.faults = .none
        harness.card.insert()
        harness.card.powerOn()
        try requireSuccess(harness.select())
        #expect(try harness.getData(0xC4).data[4] == 3, "vanishing before processing spends no try")
    }

    @Test("vanish after processing: the counter was already spent, never a free guess")
    func vanishAfterProcessing() throws {
        let harness = try Harness()
        harness.card.faults = CardFaults(rules: [
            .init(instruction: CardInstruction.verify, fault: .vanish(afterProcessing: true), times: 1)
        ])
        #expect { try harness.verify(0x82, "000000") } throws: { ($0 as? CardTransportError)?.kind == .cardRemoved }
        harness.card.insert()
        harness.card.powerOn()
        try requireSuccess(harness.select())
        #expect(try harness.getData(0xC4).data[4] == 2)
    }

    @Test("slow answers go through the injected sleep")
    func delay() throws {
        let harness = try Harness()
        harness.card.faults = CardFaults(rules: [
            .init(instruction: CardInstruction.getData, fault: .delay(.milliseconds(1500)), times: 2)
        ])
        _ = try harness.getData(0x4F)
        _ = try harness.getData(0x4F)
        _ = try harness.getData(0x4F)
        #expect(harness.sleeps.durations == [.milliseconds(1500), .milliseconds(1500)])
    }

    @Test("malformed answers", arguments: CardFaults.Malformation.allCases)
    func malformed(kind: CardFaults.Malformation) throws {
        let harness = try Harness()
        harness.card.faults = CardFaults(rules: [
            .init(instruction: CardInstruction.getData, fault: .malformed(kind), times: 1)
        ])
        let response = harness.raw("00CA004F00")
        switch kind {
        case .empty: #expect(response.isEmpty)
        case .oneByte: #expect(response.count == 1)
        case .truncated: #expect(response.count == 17)
        case .badTLV:
            #expect(response.suffix(2) == [0x90, 0x00])
            #expect {
                try TLV.parseAll(Array(response.dropLast(2)))
            } throws: { ($0 as? APDUError)?.code == .truncated }  // announces 256 bytes, carries 1
        }
        #expect(harness.raw("00CA004F00").suffix(2) == [0x90, 0x00], "fired once")
        if kind == .empty || kind == .oneByte {
            harness.card.faults = CardFaults(rules: [.init(instruction: nil, fault: .malformed(kind))])
            // No room for a status word: the answer is not an APDU response.
            #expect { try harness.getData(0x4F) } throws: { ($0 as? APDUError)?.code == .invalidStructure }
        }
    }

    @Test("a chosen status word for a chosen INS, without running the command")
    func chosenStatus() throws {
        let harness = try Harness()
        harness.card.faults = CardFaults(rules: [
            .init(instruction: CardInstruction.verify, fault: .status(.authenticationMethodBlocked))
        ])
        #expect(try harness.verify(0x82, "123456") == .authenticationMethodBlocked)
        #expect(try harness.getData(0x4F).statusWord == .success)
        harness.card.faults = .none
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord == .wrongPIN(retriesLeft: 3))
    }

    @Test("a fake card answers chosen bytes without running the command (a replayed answer)")
    func chosenAnswer() throws {
        let harness = try Harness()
        harness.card.faults = CardFaults(rules: [
            .init(instruction: CardInstruction.verify, fault: .status(.success)),
            .init(
                instruction: CardInstruction.performSecurityOperation, fault: .answer([0xAA, 0xBB, 0x90, 0x00]),
                times: 1),
        ])
        #expect(try harness.verify(0x82, "000000") == .success, "any PIN")
        let answer = try harness.decipher([UInt8](repeating: 9, count: 32))
        #expect(answer.statusWord == .success && answer.data == [0xAA, 0xBB])
        #expect(
            try harness.decipher([UInt8](repeating: 9, count: 32)).statusWord == .securityStatusNotSatisfied,
            "the real card again, which never verified a PIN")
    }

    @Test(
        "fault rules parse from their command-line form",
        arguments: [
            ("vanish", CardFaults.Rule(instruction: nil, fault: .vanish(afterProcessing: false))),
            ("vanish-after@20*1", CardFaults.Rule(instruction: 0x20, fault: .vanish(afterProcessing: true), times: 1)),
            ("delay:250@CA", CardFaults.Rule(instruction: 0xCA, fault: .delay(.milliseconds(250)))),
            ("malformed:badTLV@47", CardFaults.Rule(instruction: 0x47, fault: .malformed(.badTLV))),
            ("sw:6A88@CA*3", CardFaults.Rule(instruction: 0xCA, fault: .status(.referencedDataNotFound), times: 3)),
            ("answer:01029000@2A", CardFaults.Rule(instruction: 0x2A, fault: .answer([0x01, 0x02, 0x90, 0x00]))),
            ("stall@2A*1", CardFaults.Rule(instruction: 0x2A, fault: .stall, times: 1)),
            ("late:15000@87", CardFaults.Rule(instruction: 0x87, fault: .delay(.milliseconds(15000)))),
        ])
    func parseRule(text: String, rule: CardFaults.Rule) throws {
        #expect(try CardFaults.parseRule(text) == rule)
    }

    @Test(
        "bad fault rules are rejected",
        arguments: [
            "", "explode", "delay", "delay:x", "sw:6A", "sw:6A88@XYZ",
            "vanish*0", "malformed:nope", "answer:90", "answer:xyz", "stall:5", "late", "late:-1",
        ])
    func badRule(text: String) {
        #expect { try CardFaults.parseRule(text) } throws: { ($0 as? SimulatorError)?.code == .invalidArgument }
    }

    @Test("a stalled card does what it was asked and never answers; in process that is a deadline passing")
    func stall() throws {
        let harness = try Harness()
        harness.card.faults = CardFaults(rules: [.init(instruction: CardInstruction.verify, fault: .stall, times: 1)])
        #expect(harness.card.respond(to: Hex.decode("0020008206303030303030") ?? []) == .stalled)
        harness.card.faults = CardFaults(rules: [.init(instruction: CardInstruction.verify, fault: .stall, times: 1)])
        #expect { try harness.verify(0x82, "000000") } throws: { ($0 as? CardTransportError)?.kind == .timeout }
        #expect(try harness.getData(0xC4).data[4] == 1, "both wrong PINs were counted by the card")
    }

    @Test("a powered-off card gives no answer through the connection")
    func poweredOff() throws {
        let harness = try Harness()
        harness.card.powerOff()
        #expect(harness.card.process([0x00, 0xCA, 0x00, 0x4F, 0x00]).isEmpty)
        let error = #expect(throws: CardTransportError.self) { try harness.getData(0x4F) }
        #expect(error == CardTransportError(.cardRemoved, "the simulated card is not powered"))
    }
}
