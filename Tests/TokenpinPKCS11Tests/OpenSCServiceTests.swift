import Foundation
import Testing
import TokenpinCore
import TokenpinPKCS11
import TokenpinTestSupport

@testable import TokenpinService

/// A service for alice whose PKCS#11 tokens are OpenSC's (the sandbox's pcscd), enrolled under PIN 482916.
private func openSCService(_ card: SimulatedPIVCard, fallback: FallbackPolicy = .allow) throws -> PINService {
    var configuration = Configuration()
    configuration.kdfMemoryMiB = 8
    configuration.kdfPasses = 1
    configuration.fallback = fallback
    configuration.pkcs11Module = Tools.openSCModule
    configuration.cardTimeoutSeconds = 30
    var service = PINService(
        store: RecordStore(directory: card.directory + "/store"), configuration: configuration, user: "alice",
        selection: CardSelection(application: .pkcs11))
    service.pkcs11.helper = Tools.helper
    service.pkcs11.environment = OpenSCSandbox.environment(home: card.directory)
    _ = try service.enrol(ScriptedInteraction(["482916", "482916"]))
    return service
}

/// The same service with another fallback policy.
private func withFallback(_ service: PINService, _ fallback: FallbackPolicy) -> PINService {
    var configuration = service.configuration
    configuration.fallback = fallback
    var other = PINService(
        store: service.store, configuration: configuration, user: "alice", selection: service.selection)
    other.pkcs11 = service.pkcs11
    return other
}

extension OpenSCTests {
    @Test("through the service: bind the 9D key with --app pkcs11 and OpenSC's module, verify by token, re-sealed")
    func bindThroughService() throws {
        let card = try SimulatedPIVCard()
        let service = try openSCService(card)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        let bound = try #require(try service.store.load(user: "alice")?.slot(.token)?.token)
        #expect(bound.application == "pkcs11")
        #expect(bound.uri?.hasPrefix("pkcs11:model=PKCS%2315%20emulated") == true)
        let report = try service.verify(ScriptedInteraction(["123456"]), method: .token)
        #expect(report.outcome == .verified(method: .token))
        let resealed = try #require(try service.store.load(user: "alice")?.slot(.token)?.token)
        #expect(resealed.ephemeralPublicKey != bound.ephemeralPublicKey)
        #expect(try card.triesLeft() == 3)

        // The card pulled: the daemon's probe says the token left.
        let probe = PKCS11PresenceProbe(
            uri: try #require(bound.uri), identity: bound.serial, access: service.pkcs11)
        defer { probe.close() }
        #expect(probe.isPresent())
        card.simulator.kill()
        try OpenSCSandbox.waitForCard(present: false)
        #expect(!probe.isPresent())
    }

    @Test("lockout through the service: wrong card PINs counted on the card until blocked, tokenpin's PIN untouched")
    func lockoutThroughService() throws {
        let card = try SimulatedPIVCard()
        let service = try openSCService(card)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        var prompts: [SecretPrompt] = []
        var failures: [String] = []
        for expected in [2, 1, 0] {
            let script = ScriptedInteraction(["000000", "482916"])
            let report = try service.verify(script)
            #expect(report.outcome == .verified(method: .pin), "the PIN fallback (fallback = allow)")
            failures.append(report.tokenFailure ?? "")
            prompts.append(contentsOf: script.prompts)
            #expect(try card.triesLeft() == expected, "the wrong PIN was counted on the card")
        }
        print("figure: OpenSC lockout through the service: \(failures)")
        #expect(failures.allSatisfy { $0.contains("card PIN") || $0.contains("locked") || $0.contains("blocked") })
        #expect(failures.last?.contains("blocked") == true || failures.last?.contains("locked") == true)
        // The card PIN prompts said the last try when the token said so.
        let cardPrompts = prompts.compactMap { prompt -> Int? in
            if case .cardPIN(_, let tries) = prompt { return tries }
            return nil
        }
        print("figure: OpenSC card PIN prompts' tries: \(cardPrompts)")
        #expect(cardPrompts.count == 3)

        // Blocked: no card PIN is asked; the PIN fallback per policy, and refused with fallback = deny.
        let blocked = ScriptedInteraction(["482916"])
        let report = try service.verify(blocked)
        #expect(report.outcome == .verified(method: .pin))
        #expect(blocked.prompts == [.pin])
        let strict = ScriptedInteraction([])
        guard case .tokenRejected(let reason) = try withFallback(service, .deny).verify(strict).outcome else {
            Issue.record("a blocked token with fallback = deny is not refused")
            return
        }
        #expect(reason.contains("blocked") || reason.contains("locked"), "\(reason)")
        #expect(strict.prompts.isEmpty)
        #expect(try service.status().remaining == 5, "tokenpin's PIN counter untouched by the card's failures")
    }
}
