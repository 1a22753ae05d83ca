import Foundation
import Synchronization
import Testing
import TokenpinCore
import TokenpinProtocol
import TokenpinService

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite struct JSONParserTests {
    @Test(arguments: [
        "", " ", "{", "}", "[", "nul", "tru", "\"abc", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "01", "-",
        "1.5", "1e3", "{\"a\":1}x", "{\"a\":1,\"a\":2}", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\u{01}\"",
        "99999999999999999999", "{1:2}", "'a'",
    ])
    func rejectsMalformed(text: String) {
        #expect { try JSONParser.parse(bytes(text)) } throws: { ($0 as? ProtocolError)?.code == .malformed }
    }

    @Test func rejectsInvalidUTF8() {
        for bad: [UInt8] in [
            [0x22, 0xC0, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xFF, 0x22], [0x22, 0xE2, 0x82, 0x22],
        ] {
            #expect { try JSONParser.parse(bad) } throws: { ($0 as? ProtocolError)?.code == .malformed }
        }
    }

    @Test func rejectsDeepNesting() {
        let deep = String(repeating: "[", count: 20) + String(repeating: "]", count: 20)
        #expect { try JSONParser.parse(bytes(deep)) } throws: { ($0 as? ProtocolError)?.code == .malformed }
    }

    @Test func parsesAndRoundTrips() throws {
        let text = "{\"a\":[1,-2,true,false,null],\"b\":\"x\\\"y\\n\\u00e9\\ud83d\\ude00\",\"c\":{}}"
        let value = try JSONParser.parse(bytes(text))
        #expect(value["b"]?.stringValue == "x\"y\né😀")
        #expect(try JSONParser.parse(value.serialized) == value)
    }

}

/// Issue 19: every one-byte change of a valid line (each byte replaced by each of a set of bytes that can change
/// its meaning, or removed) either decodes to a message whose own line decodes to it again, or is refused with one
/// of the codes a line's content can earn: never a trap, never an I/O code, never a message that re-encodes to
/// something else. Fuzzing (Tests/Fuzz, the json target) explores further; this is the property, exhaustively.
@Suite struct OneByteChangeTests {
    /// The codes `parse` may give for a line's content (the others belong to the connection).
    static let contentCodes: Set<ProtocolError.Code> = [
        .malformed, .oversized, .unsupportedVersion, .unknownType, .unknownField, .missingField, .badField,
    ]
    /// What each byte is replaced with: JSON's structure, digits, the letters of its literals, control bytes and
    /// broken UTF-8.
    static let replacements = bytes("{}[]\":,\\ -+.0129aeflnrstuxyzE") + [0x00, 0x0A, 0x1F, 0x7F, 0x80, 0xC3, 0xFF]

    static let validClientLines = [
        "{\"v\":1,\"type\":\"request\",\"op\":\"verify\",\"user\":\"alice\"}",
        "{\"v\":2,\"type\":\"request\",\"op\":\"toggle\",\"authType\":\"token\",\"on\":true,\"newPINAttempts\":3}",
        "{\"v\":2,\"type\":\"request\",\"op\":\"import\",\"record\":\"e30=\"}",
        "{\"v\":1,\"type\":\"secret\",\"prompt\":\"pin\",\"value\":\"48\\\"29\\u00e916\"}",
        "{\"v\":2,\"type\":\"confirm\",\"answer\":false}",
        "{\"v\":2,\"type\":\"choice\",\"index\":1}",
        "{\"v\":2,\"type\":\"cancel\"}",
    ]
    static let validServerLines = [
        "{\"v\":2,\"type\":\"prompt\",\"prompt\":\"card-pin\",\"card\":\"0006 1234\",\"remaining\":3}",
        "{\"v\":2,\"type\":\"question\",\"text\":\"Replace the key?\",\"typed\":\"replace\"}",
        "{\"v\":2,\"type\":\"choice\",\"text\":\"Which card?\",\"options\":[\"a\",\"b\"]}",
        "{\"v\":2,\"type\":\"event\",\"event\":\"wrongPIN\",\"user\":\"alice\",\"remaining\":4,\"lastTry\":false}",
        "{\"v\":2,\"type\":\"result\",\"exitCode\":0,\"watching\":\"*\"}",
        "{\"v\":2,\"type\":\"error\",\"code\":\"not-enrolled\",\"message\":\"no PIN\",\"exitCode\":4}",
    ]

    /// Every line one byte away from `line`: each byte replaced by each replacement, and each byte removed.
    static func neighbours(of line: [UInt8]) -> [[UInt8]] {
        var all: [[UInt8]] = []
        for index in line.indices {
            for byte in replacements where byte != line[index] {
                var changed = line
                changed[index] = byte
                all.append(changed)
            }
            var shorter = line
            shorter.remove(at: index)
            all.append(shorter)
        }
        return all
    }

    /// Checks the property for every neighbour of `line`; returns how many decoded and how many were refused.
    static func check<Message: Equatable>(
        _ line: String, parse: ([UInt8]) throws(ProtocolError) -> Message, encode: (Message) -> [UInt8]
    ) -> (decoded: Int, refused: Int) {
        var decoded = 0
        var refused = 0
        for changed in neighbours(of: bytes(line)) {
            do {
                let message = try parse(changed)
                decoded += 1
                let again = encode(message)
                #expect(again.last == 0x0A, "a line ends in a newline")
                #expect(
                    (try? parse(Array(again.dropLast()))) == message,
                    "\(String(decoding: changed, as: UTF8.self)) decoded, its line \(String(decoding: again, as: UTF8.self)) did not"
                )
            } catch {
                refused += 1
                #expect(contentCodes.contains(error.code), "\(String(decoding: changed, as: UTF8.self)): \(error)")
                #expect(!error.detail.isEmpty)
            }
        }
        return (decoded, refused)
    }

    @Test(arguments: validClientLines)
    func everyClientLineNeighbour(line: String) throws {
        _ = try ClientMessage.parse(bytes(line))
        let counts = Self.check(line, parse: ClientMessage.parse, encode: \.line)
        // Some changes keep a valid message (a digit, a letter of a name) and most do not: both sides are reached.
        #expect(counts.decoded > 0 && counts.refused > counts.decoded, "\(counts)")
    }

    @Test(arguments: validServerLines)
    func everyServerLineNeighbour(line: String) throws {
        _ = try ServerMessage.parse(bytes(line))
        let counts = Self.check(line, parse: ServerMessage.parse, encode: \.line)
        #expect(counts.decoded > 0 && counts.refused > counts.decoded, "\(counts)")
    }
}

@Suite struct ClientMessageTests {
    static let valid = [
        "{\"v\":1,\"type\":\"request\",\"op\":\"verify\"}",
        "{\"v\":1,\"type\":\"request\",\"op\":\"status\",\"user\":\"alice\"}",
        "{\"v\":1,\"type\":\"request\",\"op\":\"toggle\",\"authType\":\"pin\",\"on\":false}",
        "{\"v\":1,\"type\":\"request\",\"op\":\"import\",\"record\":\"e30=\"}",
        "{\"v\":1,\"type\":\"request\",\"op\":\"change\",\"newPINAttempts\":3}",
        "{\"v\":1,\"type\":\"secret\",\"prompt\":\"pin\",\"value\":\"482916\"}",
        "{\"v\":1,\"type\":\"confirm\",\"answer\":true}",
        "{\"v\":1,\"type\":\"cancel\"}",
    ]

    @Test(arguments: valid)
    func everyPrefixFailsCleanly(text: String) throws {
        let all = bytes(text)
        _ = try ClientMessage.parse(all)
        for length in 0..<all.count {
            #expect {
                try ClientMessage.parse(Array(all[..<length]))
            } throws: { ($0 as? ProtocolError)?.code == .malformed }
        }
        #expect { try ClientMessage.parse(all + bytes("x")) } throws: { ($0 as? ProtocolError)?.code == .malformed }
    }

    @Test(arguments: [
        ("{\"type\":\"request\",\"op\":\"verify\"}", ProtocolError.Code.missingField),
        ("{\"v\":4,\"type\":\"request\",\"op\":\"verify\"}", .unsupportedVersion),
        ("{\"v\":0,\"type\":\"request\",\"op\":\"verify\"}", .unsupportedVersion),
        ("{\"v\":\"1\",\"type\":\"request\",\"op\":\"verify\"}", .unsupportedVersion),
        ("{\"v\":1,\"type\":\"request\",\"op\":\"format-disk\"}", .unknownType),
        ("{\"v\":1,\"type\":\"hello\"}", .unknownType),
        ("{\"v\":1,\"type\":\"request\",\"op\":\"verify\",\"pin\":\"1234\"}", .unknownField),
        ("{\"v\":1,\"type\":\"request\",\"op\":\"verify\",\"user\":\"../etc\"}", .badField),
        ("{\"v\":1,\"type\":\"request\",\"op\":\"verify\",\"user\":7}", .badField),
        ("{\"v\":1,\"type\":\"request\",\"op\":\"toggle\",\"authType\":\"face\",\"on\":true}", .badField),
        (
            "{\"v\":1,\"type\":\"request\",\"op\":\"toggle\",\"authType\":\"token\",\"on\":false,\"method\":\"both\"}",
            .badField
        ),
        ("{\"v\":1,\"type\":\"request\",\"op\":\"import\",\"record\":\"!!!\"}", .badField),
        ("{\"v\":1,\"type\":\"request\",\"op\":\"change\",\"newPINAttempts\":9}", .badField),
        ("{\"v\":1,\"type\":\"secret\",\"prompt\":\"pin\"}", .missingField),
        ("{\"v\":1,\"type\":\"secret\",\"prompt\":\"pin\",\"value\":1234}", .badField),
        ("[1,2]", .malformed),
        ("garbage", .malformed),
    ])
    func rejectsWithCode(text: String, code: ProtocolError.Code) {
        #expect(throws: ProtocolError(code, "")) {
            do throws(ProtocolError) {
                _ = try ClientMessage.parse(bytes(text))
            } catch {
                throw ProtocolError(error.code, "")
            }
        }
    }

    @Test func requestLinesRoundTrip() throws {
        let requests = [
            Request(.verify(.init())), Request(.status(.init()), user: "bob"), Request(.toggle(.init(.pin, on: false))),
            Request(.toggle(.init(.token, on: false, method: .token))),
            Request(.import(.init(record: [1, 2, 3, 0xFF]))),
            Request(.enrol(.init()), newPINAttempts: 3),
        ]
        for request in requests {
            let line = ClientMessage.request(request).line
            #expect(line.last == 0x0A)
            #expect(try ClientMessage.parse(Array(line.dropLast())) == .request(request))
        }
    }

    /// Each operation with every value it can carry set comes back the same, and a field of one operation is
    /// refused on another.
    @Test func everyOperationsValuesRoundTrip() throws {
        let operations: [TokenpinProtocol.Operation] = [
            .ping(.init()), .enrol(.init()), .verify(.init(method: .token, loginKeyring: true)), .change(.init()),
            .reset(.init(administrator: true)), .status(.init()), .types(.init()),
            .toggle(.init(.token, on: true, generateKey: true, assumeYes: true, mode: .both, slot: "9d")),
            .toggle(.init(.token, on: false, method: .pin)), .import(.init(record: [0, 0xFF])), .watch(.init()),
            .readers(.init()), .cardChangePIN(.init()), .cardUnblock(.init(withAdminPIN: true)),
            .unenrol(.init(method: .token, administrator: true)),
            .derive(.init(application: try #require(ApplicationName("ssh:work")), method: .pin)),
            .sealLoginPassword(.init()),
        ]
        #expect(Set(operations.map(\.name)) == Set(TokenpinProtocol.Operation.names))
        for operation in operations {
            var request = Request(operation, user: "bob", newPINAttempts: 2)
            request.reader = "Yubico*"
            request.pinpad = false
            let line = ClientMessage.request(request).line
            #expect(try ClientMessage.parse(Array(line.dropLast())) == .request(request), "\(operation.name)")
        }
        for (line, code) in [
            (#"{"v":3,"type":"request","op":"enrol","record":"AA=="}"#, ProtocolError.Code.unknownField),
            (#"{"v":3,"type":"request","op":"status","method":"pin"}"#, .unknownField),
            (#"{"v":3,"type":"request","op":"import","admin":true,"record":"AA=="}"#, .unknownField),
            (#"{"v":3,"type":"request","op":"derive","method":"pin"}"#, .missingField),
            (#"{"v":3,"type":"request","op":"toggle","on":true}"#, .missingField),
        ] {
            #expect(throws: ProtocolError.self, "\(line)") { _ = try ClientMessage.parse(Array(line.utf8)) }
            do {
                _ = try ClientMessage.parse(Array(line.utf8))
            } catch {
                #expect(error.code == code, "\(line)")
            }
        }
    }

    @Test func secretLineKeepsEveryByte() throws {
        let secret = SecretBytes(count: 4) { $0.copyBytes(from: [0x22, 0x5C, 0x0A, 0xC3]) }
        _ = secret
        let line = ClientMessage.secret(prompt: "pin", value: [0x22, 0x5C, 0x0A, 0x41]).line
        #expect(line.filter { $0 == 0x0A }.count == 1)
        #expect(
            try ClientMessage.parse(Array(line.dropLast())) == .secret(prompt: "pin", value: [0x22, 0x5C, 0x0A, 0x41]))
    }

    @Test func base64IsStrict() {
        #expect(Base64.decode("aGVsbG8=") == bytes("hello"))
        #expect(Base64.encode(bytes("hello")) == "aGVsbG8=")
        for bad in ["aGVsbG8", "aGV=bG8=", "a===", "aGVsbG8==", "aGVs\nbG8="] { #expect(Base64.decode(bad) == nil) }
        for length in 0..<20 {
            let data = (0..<length).map { UInt8($0 * 37 & 0xFF) }
            #expect(Base64.decode(Base64.encode(data)) == data)
        }
    }
}

@Suite struct ServerMessageTests {
    @Test func verifyReportsRoundTrip() throws {
        var counter = RetryCounter(max: 5)
        counter.consumeAttempt(at: Date(timeIntervalSince1970: 1_700_000_000))
        let reports = [
            VerifyReport(outcome: .verified(method: .pin), kdfNanoseconds: 42, counter: RetryCounter(max: 5)),
            VerifyReport(outcome: .rejected(remaining: 4, lastTry: false), counter: counter),
            VerifyReport(outcome: .locked), VerifyReport(outcome: .delayed(seconds: 30), tokenFailure: "no card"),
        ]
        for report in reports {
            let line = ServerMessage.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields).line
            guard case .result(let code, let fields) = try ServerMessage.parse(Array(line.dropLast())) else {
                Issue.record("not a result")
                continue
            }
            #expect(code == Int(report.exitCode.rawValue))
            #expect(try VerifyReport(protocolFields: fields) == report)
        }
    }

    @Test func questionsRoundTripWithTheWordToType() throws {
        for question in [
            ServerMessage.question("Go on?"), .question("Card X holds a key (rsa2048).", typed: "replace"),
        ] {
            #expect(try ServerMessage.parse(Array(question.line.dropLast())) == question)
        }
    }

    @Test func toggleRequestsCarryTheMode() throws {
        let request = Request(.toggle(.init(.token, on: true, mode: .both)))
        guard case .request(let parsed) = try ClientMessage.parse(Array(ClientMessage.request(request).line.dropLast()))
        else {
            Issue.record("not a request")
            return
        }
        #expect(parsed.operation == .toggle(.init(.token, on: true, mode: .both)))
        let bad = #"{"v":1,"type":"request","op":"toggle","authType":"token","on":true,"mode":"all"}"#
        #expect { _ = try ClientMessage.parse(Array(bad.utf8)) } throws: { ($0 as? ProtocolError)?.code == .badField }
    }

    @Test func requestsCarryTheApplicationAndTheSlot() throws {
        var request = Request(.toggle(.init(.token, on: true, slot: "82")))
        request.application = .piv
        guard case .request(let parsed) = try ClientMessage.parse(Array(ClientMessage.request(request).line.dropLast()))
        else {
            Issue.record("not a request")
            return
        }
        #expect(parsed.application == .piv && parsed.operation == .toggle(.init(.token, on: true, slot: "82")))
        var unblock = Request(.cardUnblock(.init()))
        unblock.application = .openpgp
        guard
            case .request(let parsedUnblock) = try ClientMessage.parse(
                Array(ClientMessage.request(unblock).line.dropLast()))
        else {
            Issue.record("not a request")
            return
        }
        #expect(parsedUnblock.application == .openpgp)
        var pkcs11 = Request(.toggle(.init(.token, on: true)))
        pkcs11.application = .pkcs11
        pkcs11.tokenURI = "pkcs11:token=ci;id=%01"
        guard
            case .request(let parsedPKCS11) = try ClientMessage.parse(
                Array(ClientMessage.request(pkcs11).line.dropLast()))
        else {
            Issue.record("not a request")
            return
        }
        #expect(parsedPKCS11.application == .pkcs11 && parsedPKCS11.tokenURI == "pkcs11:token=ci;id=%01")
        for (line, code) in [
            (#"{"v":2,"type":"request","op":"verify","tokenURI":"file:///x.so"}"#, ProtocolError.Code.badField),
            (#"{"v":2,"type":"request","op":"verify","tokenURI":7}"#, .badField),
            (#"{"v":2,"type":"request","op":"verify","pkcs11Module":"/tmp/evil.so"}"#, .unknownField),
            (
                #"{"v":2,"type":"request","op":"toggle","authType":"token","on":true,"app":"fido"}"#,
                ProtocolError.Code.badField
            ),
            (#"{"v":2,"type":"request","op":"toggle","authType":"token","on":true,"app":7}"#, .badField),
            (#"{"v":2,"type":"request","op":"toggle","authType":"token","on":true,"slot":""}"#, .badField),
            (#"{"v":2,"type":"request","op":"toggle","authType":"token","on":true,"slot":"9d9d9d9d9"}"#, .badField),
            (#"{"v":2,"type":"request","op":"verify","slot":"9d"}"#, .unknownField),
        ] {
            #expect("\(line)") { _ = try ClientMessage.parse(Array(line.utf8)) } throws: {
                ($0 as? ProtocolError)?.code == code
            }
        }
    }

    @Test func serviceErrorsRoundTrip() throws {
        let errors: [ServiceError] = [
            .notEnrolled(user: "a", path: "/p"), .alreadyEnrolled(user: "a", path: "/p"), .policyViolation(.sequence),
            .store(StoreError(.corrupt, path: "/p", "bad")), .cancelled, .crypto(CryptoError(.kdfFailed, "oom")),
            .pinAlwaysEnabled, .malformedRecoveryKey("short"), .tokenUnavailable("none"), .tokenNotEnabled,
            .tokenAlreadyEnabled(serial: "0006 1234"), .serviceUnavailable("down"), .input("eof"),
            .configuration("bad"), .cardRefused("no"), .permissionDenied("mine"),
            .siteCheckRefused(reason: "ends in the current year (2026)"),
        ]
        for error in errors {
            guard
                case .error(let code, let message, let exitCode, let fields) =
                    try ServerMessage.parse(Array(error.protocolMessage.line.dropLast()))
            else {
                Issue.record("not an error")
                continue
            }
            #expect(exitCode == Int(ExitCode(error).rawValue))
            #expect(ServiceError(protocolCode: code, message: message, fields: fields) == error)
        }
    }

    @Test func everyPromptRoundTrips() throws {
        let prompts: [SecretPrompt] = [
            .pin, .currentPIN, .newPIN, .confirmPIN, .recoveryKey,
            .cardPIN(card: "0006 1234", triesLeft: 3), .newCardPIN, .confirmCardPIN,
            .adminPIN(card: "x", triesLeft: 2), .resetCode(card: "y", triesLeft: 1),
            .puk(card: "YubiKey PIV 12345678", triesLeft: 3), .puk(card: "PIV card 1234…abcd", triesLeft: nil),
            .managementKey(card: "z"),
        ]
        for prompt in prompts {
            guard
                case .prompt(let name, let card, let tries) = try ServerMessage.parse(
                    Array(prompt.message.line.dropLast()))
            else {
                Issue.record("not a prompt")
                continue
            }
            #expect(SecretPrompt(name: name, card: card, triesLeft: tries) == prompt)
        }
    }

    @Test func everyEventRoundTrips() {
        let events: [Event] = [
            .created, .verified(method: .pin), .changed, .reset, .wrongPIN(remaining: 1, lastTry: true),
            .locked, .delayed(seconds: 5), .tokenFailed(reason: "gone", fallback: true),
            .tokenFailed(reason: "wrong card PIN", fallback: false, cardTriesLeft: 2), .cancelled,
            .policyViolation(rule: "sequence"),
            .policyViolation(rule: "site-check", reason: "ends in the current year (2026)"),
            .typeChanged(type: .token, enabled: false),
        ]
        for event in events {
            #expect(Event(name: event.name, fields: event.protocolFields) == event)
        }
    }
}

@Suite struct LineChannelTests {
    func pair() -> (LineChannel, LineChannel) {
        var fds: [Int32] = [0, 0]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
        return (LineChannel(fd: fds[0], maximumLineLength: 100), LineChannel(fd: fds[1], maximumLineLength: 100))
    }

    @Test func readsLinesAcrossWrites() throws {
        let (a, b) = pair()
        try a.write(bytes("one\ntw"))
        try a.write(bytes("o\n"))
        #expect(try b.readLine(timeoutMilliseconds: 1000) == bytes("one"))
        #expect(try b.readLine(timeoutMilliseconds: 1000) == bytes("two"))
    }

    @Test func oversizedTruncatedClosedAndTimeout() throws {
        let (a, b) = pair()
        try a.write([UInt8](repeating: 0x41, count: 150))
        #expect(throws: ProtocolError(.oversized, "a line is longer than 100 bytes")) {
            try b.readLine(timeoutMilliseconds: 1000)
        }
        let (c, d) = pair()
        try c.write(bytes("{\"v\":1"))
        c.shutdown()
        #expect(throws: ProtocolError(.truncated, "the connection closed in the middle of a message")) {
            try d.readLine(timeoutMilliseconds: 1000)
        }
        let (e, f) = pair()
        e.close()
        #expect(throws: ProtocolError(.closed, "the peer closed the connection")) {
            try f.readLine(timeoutMilliseconds: 1000)
        }
        let (g, h) = pair()
        #expect(throws: ProtocolError(.timeout, "no complete message arrived in time")) {
            try h.readLine(timeoutMilliseconds: 300)
        }
        withExtendedLifetime(g) {}
    }

    /// A byte every 100 ms for up to 4 s against a 500 ms timeout: the read gives up long before the bytes stop.
    @Test func tricklingBytesDoNotExtendTheTimeout() throws {
        let (a, b) = pair()
        let fd = a.fd
        let stop = Atomic<Bool>(false)
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            for _ in 0..<40 where !stop.load(ordering: .acquiring) {
                _ = withUnsafeBytes(of: UInt8(0x41)) { send(fd, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
                usleep(100_000)
            }
            stopped.signal()
        }.start()
        let start = Date()
        #expect(throws: ProtocolError(.timeout, "no complete message arrived in time")) {
            try b.readLine(timeoutMilliseconds: 500)
        }
        #expect(Date().timeIntervalSince(start) < 3)
        // The writer is done with the descriptor before it is closed, so no byte reaches a socket that reused it.
        stop.store(true, ordering: .releasing)
        stopped.wait()
        withExtendedLifetime(a) {}
    }
}
