import Testing
import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// Protocol version 2: one field vocabulary with the CLI's `--json`, and version 1's names still read.
@Suite struct ProtocolVersionTests {
    func keys(_ message: ServerMessage) throws -> [String] {
        try JSONParser.parse(Array(message.line.dropLast())).members?.map(\.key) ?? []
    }

    @Test func writesVersionTwoNames() throws {
        let prompt = ServerMessage.prompt(name: "card-pin", card: "0006 1234", triesLeft: 2)
        #expect(try keys(prompt) == ["v", "type", "prompt", "card", "remaining"])
        let rejected = VerifyReport(outcome: .rejected(remaining: 4, lastTry: false))
        #expect(rejected.protocolFields.contains { $0.key == "remaining" && $0.value == .int(4) })
        #expect(!rejected.protocolFields.contains { $0.key == "triesLeft" })
        let reader = ReaderInfo(
            name: "r", cardPresent: true, serial: "0006 1234", isOpenPGP: true, usable: true,
            cardPINTriesLeft: 3)
        #expect(reader.protocolValue["cardTriesLeft"] == .int(3))
        #expect(reader.protocolValue["cardPINTriesLeft"] == nil)
        #expect(try JSONParser.parse(Array(prompt.line.dropLast()))["v"] == .int(ProtocolLimits.version))
    }

    @Test func readsBothVersions() throws {
        for (version, field) in [(1, "triesLeft"), (2, "remaining")] {
            let line = #"{"v":\#(version),"type":"prompt","prompt":"pin","\#(field)":1}"#
            #expect(try ServerMessage.parse(Array(line.utf8)) == .prompt(name: "pin", card: nil, triesLeft: 1))
            let fields = [
                JSONMember("outcome", .text("rejected")), JSONMember(field, .int(2)),
                JSONMember("lastTry", .bool(false)),
            ]
            #expect(try VerifyReport(protocolFields: fields).outcome == .rejected(remaining: 2, lastTry: false))
        }
        for field in ["cardPINTriesLeft", "cardTriesLeft"] {
            let value = JSONValue.object([
                JSONMember("name", .text("r")), JSONMember("cardPresent", .bool(true)),
                JSONMember(field, .int(1)),
            ])
            #expect(try ReaderInfo(protocolValue: value).cardPINTriesLeft == 1)
        }
    }

    @Test func newNameWinsAndIsChecked() {
        let fields = [
            JSONMember("outcome", .text("rejected")), JSONMember("remaining", .int(999)),
            JSONMember("triesLeft", .int(2)),
        ]
        #expect {
            _ = try VerifyReport(protocolFields: fields)
        } throws: { error in
            (error as? ProtocolError)?.code == .badField && "\(error)".contains("remaining")
        }
    }

    @Test(arguments: [0, 4, 99])
    func refusesOtherVersions(version: Int) {
        let line = Array(#"{"v":\#(version),"type":"request","op":"ping"}"#.utf8)
        #expect { _ = try ClientMessage.parse(line) } throws: { ($0 as? ProtocolError)?.code == .unsupportedVersion }
        let reply = Array(#"{"v":\#(version),"type":"result","exitCode":0}"#.utf8)
        #expect { _ = try ServerMessage.parse(reply) } throws: { ($0 as? ProtocolError)?.code == .unsupportedVersion }
    }
}

/// The one exit-code mapping of an outcome, beside `ExitCode`.
@Suite struct OutcomeExitCodeTests {
    @Test(arguments: [
        (VerifyOutcome.verified(method: .pin), ExitCode.success), (.verified(method: .token), .success),
        (.rejected(remaining: 2, lastTry: false), .notVerified), (.tokenRejected(reason: "x"), .notVerified),
        (.locked, .locked), (.delayed(seconds: 5), .locked),
    ])
    func mapping(outcome: VerifyOutcome, code: ExitCode) {
        #expect(outcome.exitCode == code)
        #expect(VerifyReport(outcome: outcome).exitCode == code)
    }
}

/// The one JSON value writes what the CLI's `--json` printed: doubles with three decimals, text helpers, pairs.
@Suite struct JSONOutputTests {
    @Test func cliShapes() {
        let value = JSONValue.object([
            ("ok", .bool(true)), ("ms", .double(1.23456)), ("n", .optional(nil as Int?)), ("s", .string("a\u{1}\"")),
            ("inf", .double(.infinity)), ("list", .array([.int(1), .optional("x" as String?)])),
        ])
        #expect(value.jsonText == #"{"ok":true,"ms":1.235,"n":null,"s":"a\u0001\"","inf":null,"list":[1,"x"]}"#)
        #expect(JSONValue.quote("é\n") == "\"é\\n\"")
    }

    @Test func theParserNeverMakesADouble() {
        #expect { _ = try JSONParser.parse(Array("1.5".utf8)) } throws: { ($0 as? ProtocolError)?.code == .malformed }
    }
}
