import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// A bound card of either application, with the token verify's commands named by their instruction bytes.
struct HostileSetup {
    let service: PINService
    let card: SimulatedCard

    /// The user enrolled ("482916"), the card's key bound; `fallback = deny`, so nothing hides a failure.
    init(_ application: TokenApplicationKind, fallback: FallbackPolicy = .deny) throws {
        var configuration = makeService().configuration
        configuration.fallback = fallback
        switch application {
        case .openpgp:
            card = try newCard()
            try generateDecryptionKey(card, attributes: CardKeyAttributes.nistP256)
        case .piv:
            let fixture = try PIVFixture(.yubikey)
            try fixture.generate(.keyManagement, .eccP256)
            card = fixture.card
            card.reset()
        case .pkcs11:
            preconditionFailure("a card application: PKCS#11 tokens are tested with SoftHSM (TokenpinPKCS11Tests)")
        }
        var service = PINService(
            store: makeService().store, configuration: configuration, user: "alice", time: ManualTime(),
            cards: readers([("Reader A", card)]))
        service.selection = CardSelection(application: application)
        try enrol(service)
        #expect(try service.enableToken(ScriptedInteraction(["482916", cardPIN])).outcome == .verified(method: .pin))
        self.service = service
    }
}

/// Hostile answers from either application's card, to every command of a token verify: each gives a typed
/// refusal or `token unavailable` with a reason, never a verification, and the PIN counter is untouched. A
/// status word means what it says only where it is answered: `63Cx` is a wrong PIN only after VERIFY.
@Suite struct HostileCardTests {
    /// The commands of a verify: SELECT, the reads at open, VERIFY and the key's command.
    static let openPGPCommands: [UInt8] = [0xA4, 0xCA, 0x20, 0x2A]
    /// PIV on a YubiKey: SELECT, GET DATA (CHUID), GET VERSION, GET SERIAL, VERIFY, GENERAL AUTHENTICATE.
    static let pivCommands: [UInt8] = [0xA4, 0xCB, 0xFD, 0xF8, 0x20, 0x87]
    static let faults: [CardFaults.Fault] = [
        .vanish(afterProcessing: false), .vanish(afterProcessing: true), .malformed(.truncated),
        .malformed(.oneByte), .malformed(.badTLV), .malformed(.empty), .status(StatusWord(rawValue: 0x6F00)),
        .status(.wrongPIN(retriesLeft: 2)), .stall,
    ]
    static let cases: [(TokenApplicationKind, UInt8, CardFaults.Fault)] =
        openPGPCommands.flatMap { ins in faults.map { (.openpgp, ins, $0) } }
        + pivCommands.flatMap { ins in faults.map { (.piv, ins, $0) } }

    @Test(arguments: cases)
    func aHostileAnswerNeverVerifiesAndCountsNothing(
        application: TokenApplicationKind, instruction: UInt8, fault: CardFaults.Fault
    ) throws {
        let setup = try HostileSetup(application)
        setup.card.faults = CardFaults(rules: [.init(instruction: instruction, fault: fault, times: 1)])
        let reason: String
        do {
            let start = setup.card.processedCount
            let report = try setup.service.verify(ScriptedInteraction([cardPIN]), method: .token)
            guard case .tokenRejected(let why) = report.outcome else {
                // The real key still answered: junk data after a 90 00 that carries nothing tokenpin reads, or a
                // wrong-PIN status to the tries query (the VERIFY itself then went through).
                if fault == .malformed(.truncated), report.outcome == .verified(method: .token) {
                    // A truncated answer whose last data byte (the key's output, random) made its status `6Cxx`,
                    // which ISO 7816 answers by sending the command again: the key's real answer to that opened
                    // the slot, one command more than a verify sends.
                    let faulty = setup.card.processedCount - start
                    #expect(faulty == (try Self.cleanVerifyCommands(setup)) + 1, "a truncated answer verified")
                    return
                }
                let harmless =
                    (fault == .malformed(.badTLV) && [0xA4, 0x20].contains(instruction))
                    || (fault == .status(.wrongPIN(retriesLeft: 2)) && instruction == 0x20)
                #expect(
                    harmless && report.outcome == .verified(method: .token), "a hostile card gave \(report.outcome)")
                return
            }
            reason = why
        } catch {
            #expect(ExitCode(error) == .tokenUnavailable, "\(error)")
            reason = error.message
        }
        #expect(!reason.isEmpty)
        if case .status(let statusWord) = fault, statusWord.retriesLeft != nil, instruction != 0x20 {
            #expect(!reason.contains("wrong card PIN"), "63C2 answered to INS \(Hex.encode([instruction])): \(reason)")
            #expect(reason.contains("no PIN was sent"), "\(reason)")
        }
        if case .stall = fault { #expect(reason.contains("did not answer"), "\(reason)") }
        #expect(try setup.service.store.load(user: "alice")?.counter.remaining == 5)
        setup.card.insert()
        setup.card.powerOn()
        setup.card.faults = .none
        let recovered = try setup.service.verify(ScriptedInteraction([cardPIN]), method: .token).outcome
        #expect(recovered == .verified(method: .token), "recovers")
    }

    /// The way a truncated answer can still verify (above), made certain: a `6Cxx` to the key's command is a
    /// wrong length, the transport sends the command again, and the key's real answer to that opens the slot.
    @Test(arguments: [(TokenApplicationKind.openpgp, UInt8(0x2A)), (.piv, 0x87)])
    func aWrongLengthStatusToTheKeyCommandIsAnsweredAgain(application: TokenApplicationKind, instruction: UInt8)
        throws
    {
        let setup = try HostileSetup(application)
        let clean = try Self.cleanVerifyCommands(setup)
        setup.card.faults = CardFaults(rules: [
            .init(instruction: instruction, fault: .status(StatusWord(sw1: 0x6C, sw2: 0x90)), times: 1)
        ])
        let start = setup.card.processedCount
        let report = try setup.service.verify(ScriptedInteraction([cardPIN]), method: .token)
        #expect(report.outcome == .verified(method: .token))
        // The faked status is answered without the card's processing (uncounted); the command sent again is the
        // one the key answered, so the card processed as many commands as a verify without the fault.
        #expect(setup.card.processedCount - start == clean, "the key's command was answered once, when sent again")
    }

    /// How many commands a verify with no fault sends (one is made, and counted).
    static func cleanVerifyCommands(_ setup: HostileSetup) throws(ServiceError) -> Int {
        let start = setup.card.processedCount
        _ = try setup.service.verify(ScriptedInteraction([cardPIN]), method: .token)
        return setup.card.processedCount - start
    }

    /// A card whose key answers the bind's challenge with a secret that does not match its public key: refused,
    /// naming the command the application sent.
    @Test(arguments: TokenApplicationKind.cardApplications)
    func aMismatchAtBindingNamesTheCommandSent(application: TokenApplicationKind) throws {
        let card: SimulatedCard
        let forged: [UInt8]
        switch application {
        case .openpgp:
            card = try newCard()
            try generateDecryptionKey(card, attributes: CardKeyAttributes.nistP256)
            forged = [UInt8](repeating: 0x5A, count: 32) + [0x90, 0x00]
            card.faults = CardFaults(rules: [.init(instruction: 0x2A, fault: .answer(forged))])
        case .piv:
            let fixture = try PIVFixture(.yubikey)
            try fixture.generate(.keyManagement, .eccP256)
            card = fixture.card
            card.reset()
            forged = [0x7C, 0x22, 0x82, 0x20] + [UInt8](repeating: 0x5A, count: 32) + [0x90, 0x00]
            card.faults = CardFaults(rules: [.init(instruction: 0x87, fault: .answer(forged))])
        case .pkcs11:
            preconditionFailure("a card application: PKCS#11 tokens are tested with SoftHSM (TokenpinPKCS11Tests)")
        }
        var service = makeService()
        service = PINService(
            store: service.store, configuration: service.configuration, user: "alice", time: ManualTime(),
            cards: readers([("Reader A", card)]))
        service.selection = CardSelection(application: application)
        try enrol(service)
        let command = application == .piv ? "GENERAL AUTHENTICATE" : "PSO:DECIPHER"
        #expect {
            _ = try service.enableToken(ScriptedInteraction(["482916", cardPIN]))
        } throws: { error in
            guard let error = error as? ServiceError, case .cardRefused(let why) = error else { return false }
            return why.contains("answered \(command) with a secret that does not match its public key")
                && (application == .openpgp || !why.contains("PSO"))
        }
        #expect(try service.types()[1].enabled == false, "nothing was bound")
    }

    @Test(arguments: TokenApplicationKind.cardApplications)
    func aCardThatStallsFallsBackToThePINWithNothingCounted(application: TokenApplicationKind) throws {
        let setup = try HostileSetup(application, fallback: .allow)
        let key: UInt8 = application == .openpgp ? 0x2A : 0x87
        setup.card.faults = CardFaults(rules: [.init(instruction: key, fault: .stall, times: 1)])
        let script = ScriptedInteraction([cardPIN, "482916"])
        let report = try setup.service.verify(script)
        #expect(report.outcome == .verified(method: .pin))
        #expect(report.tokenFailure?.contains("did not answer") == true, "\(report.tokenFailure ?? "")")
        #expect(try setup.service.store.load(user: "alice")?.counter.remaining == 5)
    }
}
