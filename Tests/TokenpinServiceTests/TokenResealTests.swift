import Foundation
import Synchronization
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// What passes between the service and a simulated card: every answer of the bound key (PSO:DECIPHER, or a PIV
/// GENERAL AUTHENTICATE with a key slot, its `61xx` parts joined) is kept, and in replay mode the card is a fake
/// claiming the real card's identity (its SELECT and GET DATA answers are the real card's), which takes any card
/// PIN and answers the key's command with captured bytes.
final class CardTap: Sendable {
    struct State {
        var answers: [[UInt8]] = []
        var replay: [UInt8]?
        /// A hostile reader: it keeps the real card's key answers and hands the service `6F 00` instead.
        var withhold = false
        /// The data of a key answer whose rest the card announced with `61xx`.
        var pending: [UInt8]?
    }

    let state = Mutex(State())
    /// The raw answers of the bound key (data and status word) the real card gave, in order.
    var answers: [[UInt8]] { state.withLock { $0.answers } }
    /// Makes the card a fake answering `answer` (nil: the real card again).
    func replay(_ answer: [UInt8]?) { state.withLock { $0.replay = answer } }
    /// Makes the reader keep the card's key answers from the service (false: pass them on again).
    func withhold(_ on: Bool) { state.withLock { $0.withhold = on } }
}

/// A connection to a simulated card through a `CardTap`.
final class TappedConnection: CardConnection {
    static let verify: UInt8 = 0x20  // VERIFY
    static let decipher: UInt8 = 0x2A  // PERFORM SECURITY OPERATION
    static let generalAuthenticate: UInt8 = 0x87  // PIV GENERAL AUTHENTICATE
    static let getResponse: UInt8 = 0xC0  // GET RESPONSE
    static let managementKey: UInt8 = 0x9B  // the PIV management key's reference (its answers are no slot's)

    let inner: SimulatedCardConnection
    let tap: CardTap

    init(card: SimulatedCard, tap: CardTap) {
        inner = SimulatedCardConnection(card: card, sleep: { _ in })
        self.tap = tap
    }

    var atr: [UInt8] { inner.atr }
    var lengthCapabilities: LengthCapabilities {
        get { inner.lengthCapabilities }
        set { inner.lengthCapabilities = newValue }
    }

    /// Whether `command` is the bound key's operation: PSO:DECIPHER, or GENERAL AUTHENTICATE on a key slot.
    static func isKeyOperation(_ command: [UInt8]) -> Bool {
        guard command.count >= 4 else { return false }
        return command[1] == decipher || (command[1] == generalAuthenticate && command[3] != managementKey)
    }

    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        let instruction = command.count > 1 ? command[1] : 0
        let keyOperation = Self.isKeyOperation(command)
        if let replay = tap.state.withLock({ $0.replay }) {
            if instruction == Self.verify { return [0x90, 0x00] }
            // The leading parts of a chained command answer 90 00; the last part answers the captured bytes.
            if keyOperation { return command[0] & 0x10 != 0 ? [0x90, 0x00] : replay }
        }
        let answer = try inner.transmit(command)
        guard answer.count >= 2, keyOperation || instruction == Self.getResponse else { return answer }
        let data = Array(answer.dropLast(2))
        let more = answer[answer.count - 2] == 0x61
        let withheld = tap.state.withLock { state -> Bool in
            if keyOperation && command[0] & 0x10 == 0 {
                state.pending = []
            }
            guard let pending = state.pending else { return false }
            if more {
                state.pending = pending + data
            } else {
                // Any algorithm's answer (a chained command's earlier parts answer a bare 90 00 and are not kept).
                if answer.suffix(2) == [0x90, 0x00], !(pending + data).isEmpty {
                    state.answers.append(pending + answer)
                }
                state.pending = nil
            }
            return state.withhold && !more
        }
        return withheld ? [0x6F, 0x00] : answer
    }
}

struct TappedSetup {
    var service: PINService
    var card: SimulatedCard
    var tap: CardTap

    func record() throws -> EnrolmentRecord { try #require(try service.store.load(user: "alice")) }
}

/// An enrolled user ("482916") with the card bound through a tap; the bind's PSO:DECIPHER answer is `answers[0]`.
/// With `decryptionKey` attributes the card gets such a key first and is bound to it as it is.
func tappedSetup(mode: VerificationMode = .either, decryptionKey: [UInt8]? = nil) throws -> TappedSetup {
    let card = try newCard()
    if let decryptionKey { try generateDecryptionKey(card, attributes: decryptionKey) }
    let tap = CardTap()
    let reader = InProcessReaders.Reader(
        name: "Reader A", isPresent: { card.isPresent },
        connect: { TappedConnection(card: card, tap: tap) }, reset: { card.reset() })
    var configuration = makeService().configuration
    configuration.mode = mode
    let service = PINService(
        store: makeService().store, configuration: configuration, user: "alice", time: ManualTime(),
        cards: InProcessReaders([reader]))
    try enrol(service)
    _ = try service.enableToken(
        ScriptedInteraction(decryptionKey == nil ? ["482916", cardPIN, adminPIN] : ["482916", cardPIN]),
        generateKey: decryptionKey == nil, assumeYes: true)
    #expect(tap.answers.count == 1, "the bind's PSO:DECIPHER was captured")
    return TappedSetup(service: service, card: card, tap: tap)
}

@Suite struct TokenResealTests {
    @Test func theBindsOwnAnswerNeverOpensTheSlot() throws {
        let setup = try tappedSetup()
        let captured = try #require(setup.tap.answers.first)
        setup.tap.replay(captured)
        // The bind checked the card with one challenge and sealed the slot under another, computed here: the
        // answer that crossed the line opens nothing, not even before the first verify.
        let replayed = try setup.service.verify(ScriptedInteraction(["000000"]), method: .token)
        guard case .tokenRejected(let reason) = replayed.outcome else {
            Issue.record("the bind's card answer verified: \(replayed.outcome)")
            return
        }
        #expect(reason.contains("does not open the token slot"))
        setup.tap.replay(nil)
        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
    }

    @Test func aRealVerifyRetiresEveryAnswerCapturedBeforeIt() throws {
        let setup = try tappedSetup()
        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
        let answers = setup.tap.answers
        #expect(answers.count == 2)
        for answer in answers {
            setup.tap.replay(answer)
            let report = try setup.service.verify(ScriptedInteraction(["000000"]), method: .token)
            if case .tokenRejected = report.outcome {
            } else {
                Issue.record("a captured answer verified: \(report.outcome)")
            }
        }
        setup.tap.replay(nil)
        #expect(
            try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token),
            "the card still works")
        #expect(try setup.record().counter.remaining == 5, "no PIN try was spent")
    }

    @Test func eachVerifyChangesTheEphemeralKeyAndNothingElse() throws {
        let setup = try tappedSetup()
        #expect(try verify(setup.service, "000001") == .rejected(remaining: 4, lastTry: false))
        let before = try setup.record()
        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
        let after = try setup.record()
        let old = try #require(before.slot(.token))
        let new = try #require(after.slot(.token))
        let oldBinding = try #require(old.token)
        let newBinding = try #require(new.token)
        #expect(newBinding.ephemeralPublicKey != oldBinding.ephemeralPublicKey)
        #expect(newBinding.serial == oldBinding.serial && newBinding.cardPublicKey == oldBinding.cardPublicKey)
        #expect(new.kdf.salt != old.kdf.salt, "a fresh salt with the fresh key")
        #expect(new.isWellFormed)
        #expect(after.counter == before.counter, "a token verify leaves the PIN counter as it was")
        #expect(after.slot(.pin) == before.slot(.pin) && after.slot(.recovery) == before.slot(.recovery))
        #expect(after.slots.map(\.kind) == before.slots.map(\.kind))

        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
        #expect(try setup.record().slot(.token)?.token?.ephemeralPublicKey != newBinding.ephemeralPublicKey)
        #expect(try verify(setup.service, "482916") == .verified(method: .pin), "the PIN slot still opens")
    }

    @Test func inModeBothTheCompositeSlotIsResealedAndOldAnswersFail() throws {
        let setup = try tappedSetup(mode: .both)
        let before = try setup.record()
        #expect(try setup.service.verify(ScriptedInteraction(["482916", cardPIN])).outcome == .verified(method: .both))
        let after = try setup.record()
        let old = try #require(before.slot(.composite))
        let new = try #require(after.slot(.composite))
        #expect(new.token?.ephemeralPublicKey != old.token?.ephemeralPublicKey)
        #expect(new.kdf == old.kdf, "the PIN's Argon2id salt and parameters are kept: no second derivation")
        #expect(after.slots.map(\.kind) == [.recovery, .composite])
        #expect(after.counter.remaining == 5)

        for answer in setup.tap.answers {
            setup.tap.replay(answer)
            let report = try setup.service.verify(ScriptedInteraction(["482916", "000000"]))
            #expect(report.outcome != .verified(method: .both), "a captured answer with the right PIN verified")
        }
        setup.tap.replay(nil)
        #expect(try setup.service.verify(ScriptedInteraction(["482916", cardPIN])).outcome == .verified(method: .both))
        // A PIN change in mode = both re-seals under a fresh key too, and keeps working.
        let ephemeral = try setup.record().slot(.composite)?.token?.ephemeralPublicKey
        let change = ScriptedInteraction(["482916", cardPIN, "739154", "739154"])
        #expect(try setup.service.change(change).outcome == .verified(method: .both))
        #expect(try setup.record().slot(.composite)?.token?.ephemeralPublicKey != ephemeral)
        #expect(try setup.service.verify(ScriptedInteraction(["739154", cardPIN])).outcome == .verified(method: .both))
    }

    @Test func inModeBothACardAnswerForAKeyReplacedMeanwhileIsReportedAsSuch() throws {
        let directory = temporaryDirectory("card")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stateFile = directory + "/card.json"
        let card = try SimulatedCard(stateFile: stateFile, serial: 0x0000_1111)
        var configuration = makeService().configuration
        configuration.mode = .both
        let service = PINService(
            store: makeService().store, configuration: configuration, user: "alice",
            time: ManualTime(), cards: readers([("Reader A", card)]))
        try enrol(service)
        _ = try service.enableToken(
            ScriptedInteraction(["482916", cardPIN, adminPIN]), generateKey: true, assumeYes: true)
        // The same card in a second session (its key and serial from the state file), for a second process.
        var other = service
        other.cards = readers([("Reader A", try SimulatedCard(stateFile: stateFile))])
        let concurrent = other
        // That process verifies (and re-seals) while this one waits at the card PIN prompt, before its lock.
        let interruption: () throws -> Void = {
            let outcome = try concurrent.verify(ScriptedInteraction(["482916", cardPIN])).outcome
            #expect(outcome == .verified(method: .both))
        }
        let script = InterruptedInteraction(ScriptedInteraction(["482916", cardPIN]), interruption: interruption)
        #expect { _ = try service.verify(script) } throws: { error in
            guard let error = error as? ServiceError, case .tokenUnavailable(let why) = error else { return false }
            return why.contains("re-sealed by another verification")
        }
        #expect(try service.store.load(user: "alice")?.counter.remaining == 4, "counted before the check (invariant 1)")
        #expect(try service.verify(ScriptedInteraction(["482916", cardPIN])).outcome == .verified(method: .both))
    }

    @Test func theReportNamesTheCardThatVerified() throws {
        let setup = try tappedSetup()
        let report = try setup.service.verify(ScriptedInteraction([cardPIN]))
        #expect(report.card == VerifiedCard(serial: "FFFE00001111", reader: "Reader A"))
        #expect(try setup.service.verify(ScriptedInteraction(["482916"]), method: .pin).card == nil)
    }
}

/// A script that runs `interruption` once, when the card PIN is first asked for.
final class InterruptedInteraction: Interaction {
    let script: ScriptedInteraction
    var interruption: (() throws -> Void)?

    init(_ script: ScriptedInteraction, interruption: @escaping () throws -> Void) {
        self.script = script
        self.interruption = interruption
    }

    func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        if case .cardPIN = prompt, let interruption {
            self.interruption = nil
            do { try interruption() } catch { throw .input("the interruption failed: \(error)") }
        }
        return try script.readSecret(prompt)
    }

    func report(_ event: Event) { script.report(event) }
    func confirm(_ question: String) throws(ServiceError) -> Bool { try script.confirm(question) }
    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int {
        try script.choose(question, options: options)
    }
    var newPINAttempts: Int { script.newPINAttempts }
}

/// Serves card `first` on the first connection to the reader and `then` on every later one: a card swapped
/// between the moment it was chosen and the moment it is bound.
final class SwappingReader: Sendable {
    let connections = Mutex(0)
    let first: SimulatedCard
    let then: SimulatedCard

    init(first: SimulatedCard, then: SimulatedCard) {
        self.first = first
        self.then = then
    }

    var reader: InProcessReaders.Reader {
        InProcessReaders.Reader(
            name: "Reader A", isPresent: { true },
            connect: { [self] in
                let count = connections.withLock { count in
                    count += 1
                    return count
                }
                return SimulatedCardConnection(card: count == 1 ? first : then, sleep: { _ in })
            },
            reset: { [self] in
                first.reset()
                then.reset()
            })
    }
}

@Suite struct BindSerialTests {
    @Test func aCardSwappedBeforeBindingIsRefusedBeforeAnyCardPIN() throws {
        let chosen = try newCard(0x0000_1111)
        let swapped = try newCard(0x2222_2222)
        let swap = SwappingReader(first: chosen, then: swapped)
        let base = makeService()
        let service = PINService(
            store: base.store, configuration: base.configuration, user: "alice", time: ManualTime(),
            cards: InProcessReaders([swap.reader]))
        try enrol(service)
        let script = ScriptedInteraction(["482916", cardPIN, adminPIN])
        #expect { _ = try service.enableToken(script, generateKey: true, assumeYes: true) } throws: { error in
            guard let error = error as? ServiceError, error.code == "token-unavailable" else { return false }
            return error.message.contains("FFFE:00001111") && error.message.contains("FFFE:22222222")
        }
        #expect(script.prompts == [.pin], "no admin PIN, no card PIN asked")
        #expect(cardPINTries(swapped) == 3 && adminPINTries(swapped) == 3, "no PIN reached the swapped card")
        #expect(!(try service.types()[1].enabled))
        #expect(try service.store.load(user: "alice")?.counter.remaining == 5, "the PIN was right")
    }
}
