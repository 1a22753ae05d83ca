import Foundation
import Synchronization
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// A small, seeded generator (SplitMix64), so that every hostile card of the campaign is the same from run to run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// What the real card said on the line, command by command, through the bind and the verifies.
final class LineRecording: Sendable {
    let exchanges = Mutex<[(command: [UInt8], answer: [UInt8])]>([])
    /// The answers of the bound key's command (GENERAL AUTHENTICATE on a key slot).
    let keyAnswers = Mutex<[[UInt8]]>([])
}

/// Which card the reader holds: the real one (nil) or the hostile card of a seed.
final class CardSwitch: Sendable {
    let seed = Mutex<UInt64?>(nil)
}

/// A connection that records what passes between the service and a simulated card.
final class RecordingLine: CardConnection {
    let inner: SimulatedCardConnection
    let recording: LineRecording

    init(card: SimulatedCard, recording: LineRecording) {
        inner = SimulatedCardConnection(card: card, sleep: { _ in })
        self.recording = recording
    }

    var atr: [UInt8] { inner.atr }
    var lengthCapabilities: LengthCapabilities {
        get { inner.lengthCapabilities }
        set { inner.lengthCapabilities = newValue }
    }

    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        let answer = try inner.transmit(command)
        recording.exchanges.withLock { $0.append((command, answer)) }
        if HostileCardConnection.isKeyOperation(command) && answer.suffix(2) == [0x90, 0x00] {
            recording.keyAnswers.withLock { $0.append(answer) }
        }
        return answer
    }
}

/// A hostile PIV card: it claims the bound card's identity by answering every command with what the real card
/// answered to it on the line (the same command, or the last one with the same header), answers the key's command
/// with a key answer captured on the line, takes any card PIN, and mutates some of its answers (a byte
/// flipped, cut short, lengthened, another status word, other data, another command's answer; a GET RESPONSE that
/// never ends). It holds no private key.
final class HostileCardConnection: CardConnection {
    static let statusWords: [UInt16] = [
        0x6A82, 0x6982, 0x6983, 0x6F00, 0x6700, 0x6D00, 0x6A80, 0x6B00, 0x6C10, 0x6110, 0x61FF, 0x63C0, 0x63C2,
        0x63CF, 0x9000,
    ]
    let exchanges: [(command: [UInt8], answer: [UInt8])]
    let keyAnswers: [[UInt8]]
    var generator: SeededGenerator
    /// One answer in `rate` is mutated (0: none).
    let rate: Int
    let atr: [UInt8]
    var lengthCapabilities: LengthCapabilities

    init(recording: LineRecording, atr: [UInt8], lengthCapabilities: LengthCapabilities, seed: UInt64) {
        self.lengthCapabilities = lengthCapabilities
        exchanges = recording.exchanges.withLock { $0 }
        keyAnswers = recording.keyAnswers.withLock { $0 }
        generator = SeededGenerator(state: seed)
        // One card in five mutates nothing (a pure replay); the others one answer in 2 to 8.
        rate = seed % 5 == 0 ? 0 : Int(seed % 7) + 2
        self.atr = atr
    }

    private func realAnswer(to command: [UInt8]) -> [UInt8] {
        if let exact = exchanges.last(where: { $0.command == command }) { return exact.answer }
        let header = Array(command.prefix(4))
        if let same = exchanges.last(where: { Array($0.command.prefix(4)) == header }) { return same.answer }
        return [0x6D, 0x00]
    }

    /// Whether `command` is GENERAL AUTHENTICATE on a key slot (not the management key's `9B`).
    static func isKeyOperation(_ command: [UInt8]) -> Bool {
        command.count >= 4 && command[1] == 0x87 && command[3] != 0x9B
    }

    private func randomBytes(_ count: ClosedRange<Int>) -> [UInt8] {
        (0..<Int.random(in: count, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        let instruction = command.count > 1 ? command[1] : 0
        var answer: [UInt8]
        if HostileCardConnection.isKeyOperation(command) {
            answer =
                command[0] & 0x10 != 0 ? [0x90, 0x00] : keyAnswers.randomElement(using: &generator) ?? [0x6F, 0x00]
        } else if instruction == 0x20 {  // VERIFY: any PIN
            answer = [0x90, 0x00]
        } else if instruction == 0xC0 && Int.random(in: 0..<4, using: &generator) == 0 {  // GET RESPONSE: endless
            answer = randomBytes(0...64) + [0x61, 0xFF]
        } else {
            answer = realAnswer(to: command)
        }
        guard rate > 0, Int.random(in: 0..<rate, using: &generator) == 0 else { return answer }
        let data = Array(answer.dropLast(2))
        let status = Array(answer.suffix(2))
        switch Int.random(in: 0..<6, using: &generator) {
        case 0 where !answer.isEmpty:
            answer[Int.random(in: answer.indices, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator)
        case 1:
            answer = Array(answer.prefix(Int.random(in: 0...max(0, answer.count - 1), using: &generator)))
        case 2:
            answer = data + randomBytes(1...40) + status
        case 3:
            let word = Self.statusWords.randomElement(using: &generator) ?? 0x6F00
            answer = data + [UInt8(word >> 8), UInt8(word & 0xFF)]
        case 4:
            answer = randomBytes(0...80) + [0x90, 0x00]
        default:
            answer = exchanges.randomElement(using: &generator)?.answer ?? answer
        }
        return answer
    }
}

/// The hostile-card campaign of issue 26, kept as a test: 200 hostile PIV cards (`HostileCardConnection`, each
/// seeded by its number) claim the identity of a bound card and replay what crossed the line in its bind and
/// verifies: 100 right after the bind, 100 after three verifies. Each is tried for a token verify of the bound user
/// and for a bind of another user. None may verify,
/// none may bind, none may end in an unexpected error (exit 74), and the PIN counters never move.
@Suite struct HostileCampaignTests {
    @Test func twoHundredHostilePIVCardsNeitherVerifyNorBindNorCount() throws {
        let fixture = try PIVFixture(.yubikey)
        try fixture.generate(.keyManagement, .eccP256)
        let card = fixture.card
        card.reset()
        let recording = LineRecording()
        // The card the service talks to: the real one, then each hostile card in turn.
        let hostile = CardSwitch()
        let capabilities = SimulatedCardConnection(card: card, sleep: { _ in }).lengthCapabilities
        let reader = InProcessReaders.Reader(
            name: "Reader A", isPresent: { card.isPresent },
            connect: { () -> any CardConnection in
                if let seed = hostile.seed.withLock({ $0 }) {
                    return HostileCardConnection(
                        recording: recording, atr: card.atr, lengthCapabilities: capabilities, seed: seed)
                }
                return RecordingLine(card: card, recording: recording)
            }, reset: { card.reset() })
        var configuration = makeService().configuration
        configuration.fallback = .deny
        var alice = PINService(
            store: makeService().store, configuration: configuration, user: "alice", time: ManualTime(),
            cards: InProcessReaders([reader]))
        alice.selection = CardSelection(application: .piv)
        try enrol(alice)
        #expect(try alice.enableToken(ScriptedInteraction(["482916", cardPIN])).outcome == .verified(method: .pin))
        var bob = PINService(
            store: makeService().store, configuration: configuration, user: "bob", time: ManualTime(),
            cards: InProcessReaders([reader]))
        bob.selection = CardSelection(application: .piv)
        try enrol(bob, pin: "739154")

        var tally: [String: Int] = [:]
        var verifies = 0
        var binds = 0
        // Cards 1-100 come right after the bind (the line holds the bind's answer), 101-200 after three verifies.
        for seed in UInt64(1)...200 {
            if seed == 101 {
                hostile.seed.withLock { $0 = nil }
                for _ in 0..<3 {
                    let outcome = try alice.verify(ScriptedInteraction([cardPIN]), method: .token).outcome
                    #expect(outcome == .verified(method: .token))
                }
            }
            #expect(recording.keyAnswers.withLock { $0.count } == (seed <= 100 ? 1 : 4), "the key answers on the line")
            hostile.seed.withLock { $0 = seed }
            do {
                let outcome = try alice.verify(ScriptedInteraction([cardPIN, cardPIN, cardPIN]), method: .token).outcome
                switch outcome {
                case .verified: verifies += 1
                case .tokenRejected(let reason) where reason.contains("does not open the token slot"):
                    tally["verify: refused, the answer does not open the slot", default: 0] += 1
                case .tokenRejected(let reason) where reason.contains("wrong card PIN"):
                    tally["verify: refused, a wrong card PIN (63Cx to VERIFY)", default: 0] += 1
                default: tally["verify: \(outcome)".prefix(70).description, default: 0] += 1
                }
            } catch {
                tally["verify: exit \(ExitCode(error).rawValue)", default: 0] += 1
            }
            hostile.seed.withLock { $0 = seed + 1000 }
            do {
                let outcome = try bob.enableToken(ScriptedInteraction(["739154", cardPIN, cardPIN])).outcome
                tally["bind: \(outcome)".prefix(70).description, default: 0] += 1
            } catch {
                tally["bind: exit \(ExitCode(error).rawValue)", default: 0] += 1
            }
            if try bob.store.load(user: "bob")?.slot(.token) != nil { binds += 1 }
            #expect(try alice.store.load(user: "alice")?.counter.remaining == 5, "card \(seed) moved alice's counter")
            #expect(try bob.store.load(user: "bob")?.counter.remaining == 5, "card \(seed) moved bob's counter")
        }
        hostile.seed.withLock { $0 = nil }
        #expect(verifies == 0, "false verifies")
        #expect(binds == 0, "false binds")
        #expect(tally.keys.allSatisfy { !$0.hasSuffix("exit 74") }, "\(tally)")
        #expect(try alice.verify(ScriptedInteraction([cardPIN]), method: .token).outcome == .verified(method: .token))
        let counts = tally.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: "; ")
        print("# hostile PIV cards: 200 cards, \(verifies) false verifies, \(binds) false binds: \(counts)")
    }
}
