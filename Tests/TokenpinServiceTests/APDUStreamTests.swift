import Foundation
import Synchronization
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// Every command a card sees, as `CLA INS P1 P2/length→SW`: the header, the encoded command's length (never its
/// data) and the status word of the answer.
final class APDUStream: Sendable {
    private let lines = Mutex<[String]>([])

    func record(_ command: [UInt8], answer: [UInt8]) {
        let header = Hex.encode(Array(command.prefix(4)))
        let status = answer.count >= 2 ? Hex.encode(Array(answer.suffix(2))) : "none"
        lines.withLock { $0.append("\(header)/\(command.count)→\(status)") }
    }

    /// The commands recorded since the last call.
    func take() -> [String] {
        lines.withLock { lines in
            defer { lines = [] }
            return lines
        }
    }
}

/// A connection that records every command it passes on to the simulated card.
final class StreamRecordingConnection: CardConnection {
    let inner: any CardConnection
    let stream: APDUStream

    init(_ inner: any CardConnection, stream: APDUStream) {
        self.inner = inner
        self.stream = stream
    }

    var atr: [UInt8] { inner.atr }
    var lengthCapabilities: LengthCapabilities {
        get { inner.lengthCapabilities }
        set { inner.lengthCapabilities = newValue }
    }
    var resets: Int { inner.resets }

    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        let answer = try inner.transmit(command)
        stream.record(command, answer: answer)
        return answer
    }

    func exclusive<R: ~Copyable, E: Error>(
        transportError: (CardTransportError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R {
        try inner.exclusive(transportError: transportError, body)
    }
    func close() { inner.close() }
}

/// The golden APDU streams: the commands enrol, bind, verify, change-pin and unblock send, card by card. They were
/// written down on the code before the ISO 7816 layer (issue 19) and must stay identical through it: a moved
/// GET RESPONSE, another chunk size or one extra SELECT shows here first.
@Suite struct APDUStreamTests {
    struct Scenario: CustomTestStringConvertible, Sendable {
        var name: String
        var testDescription: String { name }
    }

    /// A service over one simulated card whose commands go to `stream`.
    static func service(_ card: SimulatedCard, stream: APDUStream, piv: Bool = false) throws -> PINService {
        let reader = InProcessReaders.Reader(
            name: "Reader A", isPresent: { card.isPresent },
            connect: {
                StreamRecordingConnection(SimulatedCardConnection(card: card, sleep: { _ in }), stream: stream)
            },
            reset: { card.reset() })
        var service = makeService()
        service = PINService(
            store: service.store, configuration: service.configuration, user: "alice", time: ManualTime(),
            cards: InProcessReaders([reader]))
        if piv { service.selection = CardSelection(application: .piv) }
        return service
    }

    /// Runs the steps of one scenario, returning each step's commands.
    static func run(_ name: String) throws -> [String: [String]] {
        let stream = APDUStream()
        var steps: [String: [String]] = [:]
        func step(_ label: String, _ body: () throws -> Void) throws {
            _ = stream.take()
            try body()
            steps[label] = stream.take()
        }
        switch name {
        case "openpgp-cv25519":
            let card = try newCard()
            let service = try service(card, stream: stream)
            try step("enrol") { _ = try enrol(service) }
            try step("bind") {
                _ = try service.enableToken(
                    ScriptedInteraction(["482916", cardPIN, adminPIN]), generateKey: true, assumeYes: true)
            }
            try step("verify") {
                let outcome = try service.verify(ScriptedInteraction([cardPIN])).outcome
                #expect(outcome.isToken)
            }
            try step("wrong-pin") { _ = try service.verify(ScriptedInteraction(["654321", "482916"])) }
            try step("change") { try service.changeCardPIN(ScriptedInteraction([cardPIN, "246810", "246810"])) }
            try step("unblock") {
                try service.unblockCardPIN(ScriptedInteraction([adminPIN, "135790", "135790"]), admin: true)
            }
        case "openpgp-rsa2048-extended", "openpgp-rsa2048-chained", "openpgp-p256", "openpgp-kdf":
            let card = try SimulatedCard(
                stateFile: nil, serial: 0x0000_1111, profile: name.hasSuffix("chained") ? .gnuk : .openpgp)
            try generateDecryptionKey(
                card, attributes: name.contains("rsa") ? CardKeyAttributes.rsa(2048) : CardKeyAttributes.nistP256)
            if name == "openpgp-kdf" { try switchKDFOn(card, hash: .sha256) }
            let service = try service(card, stream: stream)
            try step("enrol") { _ = try enrol(service) }
            try step("bind") { _ = try service.enableToken(ScriptedInteraction(["482916", cardPIN])) }
            try step("verify") {
                let outcome = try service.verify(ScriptedInteraction([cardPIN])).outcome
                #expect(outcome.isToken)
            }
            try step("wrong-pin") { _ = try service.verify(ScriptedInteraction(["654321", "482916"])) }
            try step("change") { try service.changeCardPIN(ScriptedInteraction([cardPIN, "246810", "246810"])) }
            try step("unblock") {
                try service.unblockCardPIN(ScriptedInteraction([adminPIN, "135790", "135790"]), admin: true)
            }
        case "piv-p256", "piv-rsa2048":
            let fixture = try PIVFixture(.pivCard)
            try fixture.generate(.keyManagement, name == "piv-p256" ? .eccP256 : .rsa2048)
            let service = try service(fixture.card, stream: stream, piv: true)
            try step("enrol") { _ = try enrol(service) }
            try step("bind") { _ = try service.enableToken(ScriptedInteraction(["482916", "123456"])) }
            try step("verify") {
                let outcome = try service.verify(ScriptedInteraction(["123456"])).outcome
                #expect(outcome.isToken)
            }
            try step("wrong-pin") { _ = try service.verify(ScriptedInteraction(["654321", "482916"])) }
            try step("change") { try service.changeCardPIN(ScriptedInteraction(["123456", "246813", "246813"])) }
            try step("unblock") {
                try service.unblockCardPIN(ScriptedInteraction(["12345678", "135792", "135792"]), admin: false)
            }
        default:
            Issue.record("no scenario \(name)")
        }
        return steps
    }

    static let scenarios = Array(golden.keys).sorted()

    @Test("the commands each operation sends stay as they were", arguments: scenarios)
    func stream(_ name: String) throws {
        let steps = try Self.run(name)
        let expected = try #require(Self.golden[name])
        for label in ["enrol", "bind", "verify", "wrong-pin", "change", "unblock"] {
            let seen = steps[label] ?? []
            #expect(seen == expected[label] ?? [], "\(name) \(label)")
            if seen != expected[label] ?? [] {
                print("GOLDEN \(name) \(label): [\(seen.map { "\"\($0)\"" }.joined(separator: ", "))]")
            }
        }
    }
}

extension VerifyOutcome {
    fileprivate var isToken: Bool { self == .verified(method: .token) }
}

extension APDUStreamTests {
    static let golden: [String: [String: [String]]] = [
        "openpgp-cv25519": [
            "bind": [
                "00A40400/11→9000", "00CA006E/7→9000", "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000",
                "00200082/11→9000", "00CA00F9/7→9000", "00200083/13→9000", "00CA00F9/7→9000", "00200083/13→9000",
                "00DA00C2/16→9000", "00478000/11→9000", "00CA00F9/7→9000", "00200082/11→9000", "002A8086/45→9000",
            ],
            "verify": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200082/11→9000", "002A8086/45→9000",
            ],
            "wrong-pin": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200082/11→63C2",
            ],
            "change": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00240081/17→9000",
            ],
            "unblock": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200083/13→9000", "002C0281/11→9000",
            ],
        ],
        "openpgp-rsa2048-extended": [
            "bind": [
                "00A40400/11→9000", "00CA006E/7→9000", "00478100/11→9000", "00A40400/11→9000", "00CA006E/7→9000",
                "00478100/11→9000", "00CA00F9/7→9000", "00200082/11→9000", "002A8086/266→9000",
            ],
            "verify": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200082/11→9000", "002A8086/266→9000",
            ],
            "wrong-pin": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200082/11→63C2",
            ],
            "change": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00240081/17→9000",
            ],
            "unblock": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200083/13→9000", "002C0281/11→9000",
            ],
        ],
        "openpgp-rsa2048-chained": [
            "bind": [
                "00A40400/11→9000", "00CA006E/5→9000", "00478100/8→610E", "00C00000/5→9000", "00A40400/11→9000",
                "00CA006E/5→9000", "00478100/8→610E", "00C00000/5→9000", "00CA00F9/5→9000", "00200082/11→9000",
                "102A8086/259→9000", "002A8086/9→9000",
            ],
            "verify": [
                "00A40400/11→9000", "00CA006E/5→9000", "00CA00F9/5→9000", "00200082/11→9000", "102A8086/259→9000",
                "002A8086/9→9000",
            ],
            "wrong-pin": [
                "00A40400/11→9000", "00CA006E/5→9000", "00CA00F9/5→9000", "00200082/11→6982", "00CA00C4/5→9000",
            ],
            "change": [
                "00A40400/11→9000", "00CA006E/5→9000", "00CA00F9/5→9000", "00240081/17→9000",
            ],
            "unblock": [
                "00A40400/11→9000", "00CA006E/5→9000", "00CA00F9/5→9000", "00200083/13→9000", "002C0281/11→9000",
            ],
        ],
        "openpgp-p256": [
            "bind": [
                "00A40400/11→9000", "00CA006E/7→9000", "00478100/11→9000", "00A40400/11→9000", "00CA006E/7→9000",
                "00478100/11→9000", "00CA00F9/7→9000", "00200082/11→9000", "002A8086/78→9000",
            ],
            "verify": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200082/11→9000", "002A8086/78→9000",
            ],
            "wrong-pin": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200082/11→63C2",
            ],
            "change": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00240081/17→9000",
            ],
            "unblock": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200083/13→9000", "002C0281/11→9000",
            ],
        ],
        "openpgp-kdf": [
            "bind": [
                "00A40400/11→9000", "00CA006E/7→9000", "00478100/11→9000", "00A40400/11→9000", "00CA006E/7→9000",
                "00478100/11→9000", "00CA00F9/7→9000", "00200082/37→9000", "002A8086/78→9000",
            ],
            "verify": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200082/37→9000", "002A8086/78→9000",
            ],
            "wrong-pin": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200082/37→63C2",
            ],
            "change": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00240081/69→9000",
            ],
            "unblock": [
                "00A40400/11→9000", "00CA006E/7→9000", "00CA00F9/7→9000", "00200083/37→9000", "002C0281/37→9000",
            ],
        ],
        "piv-p256": [
            "bind": [
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C3", "00FD0000/5→6D00", "00CB3FFF/11→9000",
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C3", "00FD0000/5→6D00", "00CB3FFF/11→9000",
                "00CB3FFF/11→6A82", "00200080/13→9000", "0087119D/77→9000",
            ],
            "verify": [
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C3", "00200080/13→9000", "0087119D/77→9000",
            ],
            "wrong-pin": [
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C3", "00200080/13→63C2",
            ],
            "change": [
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C2", "00240080/21→9000",
            ],
            "unblock": [
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C3", "00FD0000/5→6D00", "002C0080/21→9000",
            ],
        ],
        "piv-rsa2048": [
            "bind": [
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C3", "00FD0000/5→6D00", "00CB3FFF/11→61B2",
                "00C00000/5→9000", "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C3", "00FD0000/5→6D00",
                "00CB3FFF/11→61B2", "00C00000/5→9000", "00CB3FFF/11→6A82", "00200080/13→9000", "1087079D/260→9000",
                "0087079D/17→6108", "00C00000/5→9000",
            ],
            "verify": [
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C3", "00200080/13→9000", "1087079D/260→9000",
                "0087079D/17→6108", "00C00000/5→9000",
            ],
            "wrong-pin": [
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C3", "00200080/13→63C2",
            ],
            "change": [
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C2", "00240080/21→9000",
            ],
            "unblock": [
                "00A40400/11→9000", "00CB3FFF/11→9000", "00200080/4→63C3", "00FD0000/5→6D00", "002C0080/21→9000",
            ],
        ],
    ]
}
