import Testing
import TokenpinCore
import TokenpinTestSupport

@testable import TokenpinAPDU

private func secret(_ text: String) -> SecretBytes {
    var bytes = Array(text.utf8)
    return SecretBytes(consuming: &bytes)
}

private func bytes(_ secret: borrowing SecretBytes) -> [UInt8] { secret.withUnsafeBytes { [UInt8]($0) } }

/// A transport over scripted answers whose trace lines are kept.
private final class Traced {
    let connection: ScriptedConnection
    var lines: [String] = []
    var transport: ISO7816Transport { ISO7816Transport(connection: connection, trace: { self.lines.append($0) }) }

    init(_ answers: [String], capabilities: LengthCapabilities = .shortOnly) {
        connection = ScriptedConnection(answers, capabilities: capabilities)
    }
}

@Suite("ISO7816Transport")
struct ISO7816TransportTests {
    /// The instructions a status word is read against: the PIN ones, GET DATA, GENERAL AUTHENTICATE, PSO.
    static let instructions: [UInt8] = [0x20, 0x24, 0x2C, 0xCA, 0xCB, 0x87, 0x2A, 0xA4]

    /// Each status word and what it is, answering a PIN instruction (nil: the same for every instruction).
    static let statuses: [(UInt16, CardStatus)] = [
        (0x9000, .success),
        (0x63C2, .wrongPIN(retriesLeft: 2)), (0x63C0, .wrongPIN(retriesLeft: 0)),
        (0x6983, .blocked), (0x6982, .securityStatusNotSatisfied), (0x6985, .conditionsNotSatisfied),
        (0x6A82, .notFound), (0x6A88, .referencedDataNotFound), (0x6A80, .incorrectData),
        (0x6B00, .wrongParameters(.wrongP1P2)), (0x6A86, .wrongParameters(.incorrectP1P2)),
        (0x6D00, .unsupported(.instructionNotSupported)), (0x6E00, .unsupported(.classNotSupported)),
        (0x6A81, .unsupported(StatusWord(rawValue: 0x6A81))), (0x6881, .unsupported(.logicalChannelNotSupported)),
        (0x6884, .unsupported(.commandChainingNotSupported)),
        (0x6700, .unexpected(.wrongLength)), (0x6F00, .unexpected(.noPreciseDiagnosis)),
        (0x6581, .unexpected(.memoryFailure)), (0x1234, .unexpected(StatusWord(rawValue: 0x1234))),
    ]

    static let cases: [(UInt16, CardStatus, UInt8)] = statuses.flatMap { sw, status in
        instructions.map { (sw, status, $0) }
    }

    @Test("every status word answering every instruction: its CardStatus, or send's refusal", arguments: cases)
    func classification(raw: UInt16, status: CardStatus, instruction: UInt8) throws {
        let statusWord = StatusWord(rawValue: raw)
        let misplaced = statusWord.retriesLeft != nil && ![0x20, 0x24, 0x2C].contains(instruction)
        let name = InstructionNames.iso.name(of: instruction)
        let malformed = CardCommandError.malformed(
            APDUError(
                .unexpectedStatus, "\(name) answered \(statusWord), a wrong-PIN status, though no PIN was sent"))
        let connection = ScriptedConnection([statusWord.description])
        let transport = ISO7816Transport(connection: connection)
        let command = CommandAPDU(ins: instruction, p1: 0, p2: 0x80, le: 256)
        if misplaced {
            #expect(throws: malformed) { _ = try CardStatus(statusWord, answering: instruction) }
            #expect(throws: malformed) { _ = try transport.send(command) }
        } else if status == .success {
            #expect(try CardStatus(statusWord, answering: instruction) == status)
            #expect(try transport.send(command).statusWord == .success)
        } else {
            #expect(try CardStatus(statusWord, answering: instruction) == status)
            #expect(throws: CardCommandError.refused(status, command: name)) { _ = try transport.send(command) }
        }
    }

    @Test("6Cxx repeats the command once, and a second 6Cxx is the answer")
    func wrongLengthOnce() throws {
        let connection = ScriptedConnection(["6C05", "6C04"])
        let response = try ISO7816Transport(connection: connection).exchange(
            CommandAPDU(ins: 0xCA, p1: 0, p2: 0x4F, le: 256))
        #expect(connection.sent == [[0x00, 0xCA, 0x00, 0x4F, 0x00], [0x00, 0xCA, 0x00, 0x4F, 0x05]])
        #expect(response.statusWord == StatusWord(rawValue: 0x6C04))

        let pin = ScriptedConnection(["6C20", "6C10"])
        #expect(throws: CardCommandError.refused(.unexpected(StatusWord(rawValue: 0x6C10)), command: "GET DATA")) {
            _ = try ISO7816Transport(connection: pin).sendSensitive(
                CommandAPDU(ins: 0xCA, p1: 0, p2: 0x4F, le: 256), secret: SecretBytes(count: 0),
                answer: .secret(max: 1024))
        }
        #expect(pin.sent.count == 2)
    }

    @Test("61xx: a card that never stops announcing more is refused after a bounded number of rounds")
    func getResponseBounded() throws {
        let endless = ScriptedConnection(Array(repeating: "00000000000000006100", count: 400))
        #expect(throws: CardCommandError.self) {
            _ = try ISO7816Transport(connection: endless).exchange(CommandAPDU(ins: 0xCA, p1: 0, p2: 0x6E, le: 256))
        }
        #expect(endless.sent.count <= 258)

        let secretEndless = ScriptedConnection(Array(repeating: "61FF", count: 400))
        #expect(throws: CardCommandError.malformed(APDUError(.responseTooLong, "card keeps announcing more data"))) {
            _ = try ISO7816Transport(connection: secretEndless).sendSensitive(
                CommandAPDU(ins: 0x2A, p1: 0x80, p2: 0x86, data: [1, 2, 3], le: 256), secret: SecretBytes(count: 0),
                answer: .secret(max: 1024))
        }
        #expect(secretEndless.sent.count == 5, "the command and four GET RESPONSE rounds")
        #expect(secretEndless.sent.dropFirst().allSatisfy { $0 == [0x00, 0xC0, 0x00, 0x00, 0xFF] })
    }

    @Test("an answer longer than the secret buffer is refused, not reallocated")
    func secretAnswerTooLong() throws {
        let connection = ScriptedConnection([String(repeating: "AB", count: 300) + "9000"])
        #expect(throws: CardCommandError.malformed(APDUError(.responseTooLong, "card keeps announcing more data"))) {
            _ = try ISO7816Transport(connection: connection).sendSensitive(
                CommandAPDU(ins: 0x87, p1: 0x11, p2: 0x9D, data: [1], le: 256), secret: SecretBytes(count: 0),
                answer: .secret(max: 256))
        }
    }

    @Test("a sensitive command's trace shows its header only, and its answer only its length")
    func sensitiveTrace() throws {
        let traced = Traced(["9000", "010203046102", "05069000"])
        _ = try traced.transport.sendSensitive(
            CommandAPDU(ins: 0x20, p1: 0x00, p2: 0x82), secret: secret("271828"))
        let answer = try traced.transport.sendSensitive(
            CommandAPDU(ins: 0x2A, p1: 0x80, p2: 0x86, data: [0xA6, 0x00], le: 256), secret: SecretBytes(count: 0),
            answer: .secret(max: 1024))
        #expect(bytes(answer) == [1, 2, 3, 4, 5, 6])
        #expect(traced.connection.sent[0] == [0x00, 0x20, 0x00, 0x82, 0x06] + Array("271828".utf8))
        #expect(
            traced.lines == [
                "> 00 20 00 82 [sensitive]", "< 9000", "> 00 2A 80 86 02 A6 00 00", "< 6 bytes [sensitive], 9000",
            ])
        #expect(!traced.lines.joined().contains(Hex.encode(Array("271828".utf8))))
        #expect(!traced.lines.joined().contains("01 02"))
    }

    @Test("a long public command with a secret answer: extended where the card takes it, else chained")
    func longSensitiveCommand() throws {
        let data = [UInt8](repeating: 0x42, count: 300)
        let command = CommandAPDU(ins: 0x2A, p1: 0x80, p2: 0x86, data: data, le: CommandAPDU.extendedMaxLe)
        let extended = ScriptedConnection(
            ["AA9000"],
            capabilities: LengthCapabilities(extendedLength: true, commandChaining: true, maxCommandData: 2048))
        _ = try ISO7816Transport(connection: extended).sendSensitive(
            command, secret: SecretBytes(count: 0), answer: .secret(max: 1024),
            longCommand: .extendedOrChained(partSize: 254))
        #expect(extended.sent.map(\.count) == [4 + 3 + 300 + 2])

        let chained = ScriptedConnection(
            ["9000", "AA9000"], capabilities: LengthCapabilities(extendedLength: false, commandChaining: true))
        _ = try ISO7816Transport(connection: chained).sendSensitive(
            command, secret: SecretBytes(count: 0), answer: .secret(max: 1024),
            longCommand: .extendedOrChained(partSize: 254))
        #expect(chained.sent.map { $0[0] } == [0x10, 0x00])
        #expect(chained.sent.map(\.count) == [5 + 254, 5 + 46 + 1])

        let neither = ScriptedConnection([])
        #expect(
            throws: CardCommandError.invalidArgument("the card takes neither extended APDUs nor chaining for 300 bytes")
        ) {
            _ = try ISO7816Transport(connection: neither).sendSensitive(
                command, secret: SecretBytes(count: 0), answer: .secret(max: 1024),
                longCommand: .extendedOrChained(partSize: 254))
        }
        #expect(neither.sent.isEmpty)

        let refused = ScriptedConnection(["6A80"], capabilities: .shortOnly)
        #expect(throws: CardCommandError.refused(.incorrectData, command: "PERFORM SECURITY OPERATION")) {
            _ = try ISO7816Transport(connection: refused).sendSensitive(
                command, secret: SecretBytes(count: 0), answer: .secret(max: 1024))
        }
        #expect(refused.sent.count == 1, "a refused part ends the chain")
    }

    /// A chained answer (`61 xx` then GET RESPONSE) of a secret, whole.
    static let chainedAnswer: [[UInt8]] = [[0x01, 0x02, 0x03, 0x61, 0x03], [0x04, 0x05, 0x06, 0x90, 0x00]]

    @Test("every prefix of a chained answer fails cleanly", arguments: 0..<9)
    func truncatedChainedAnswer(cut: Int) throws {
        // The answer bytes cut after `cut` bytes: the card stops answering there (a short last answer).
        let whole = Self.chainedAnswer
        var answers: [String] = []
        var left = cut
        for part in whole {
            answers.append(Hex.encode(Array(part.prefix(left))))
            left -= min(left, part.count)
            if left == 0 { break }
        }
        let connection = ScriptedConnection(answers)
        let transport = ISO7816Transport(connection: connection)
        do {
            let answer = try transport.sendSensitive(
                CommandAPDU(ins: 0x87, p1: 0x11, p2: 0x9D, data: [0x7C, 0x00], le: 256), secret: SecretBytes(count: 0),
                answer: .secret(max: 1024))
            Issue.record("a cut answer gave \(answer.count) bytes")
        } catch .malformed(let error) {
            #expect(error.code == .invalidStructure)
        } catch .refused(let status, _) {
            // A cut that leaves a whole status word, `61 03` or `6F 00` from the script's end: never success.
            #expect(status != .success)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("the whole chained answer joins its parts in guarded memory")
    func wholeChainedAnswer() throws {
        let connection = ScriptedConnection(Self.chainedAnswer.map { Hex.encode($0) })
        let answer = try ISO7816Transport(connection: connection).sendSensitive(
            CommandAPDU(ins: 0x87, p1: 0x11, p2: 0x9D, data: [0x7C, 0x00], le: 256), secret: SecretBytes(count: 0),
            answer: .secret(max: 1024))
        #expect(bytes(answer) == [1, 2, 3, 4, 5, 6])
        #expect(connection.sent.last == [0x00, 0xC0, 0x00, 0x00, 0x03])
    }

    @Test("instruction names: the interindustry ones, an application's added or replacing one, the rest by hex")
    func names() {
        #expect(InstructionNames.iso.name(of: 0xCB) == "GET DATA")
        #expect(InstructionNames.iso.adding([0xFD: "GET VERSION"]).name(of: 0xFD) == "GET VERSION")
        let openPGP = InstructionNames.iso.adding([0x2A: "PSO:DECIPHER"])
        #expect(openPGP.name(of: 0x2A) == "PSO:DECIPHER")
        #expect(openPGP.name(of: 0xA4) == "SELECT")
        #expect(InstructionNames.iso.name(of: 0x2A) == "PERFORM SECURITY OPERATION")
        #expect(InstructionNames.iso.name(of: 0x7F) == "instruction 7F")
    }
}
