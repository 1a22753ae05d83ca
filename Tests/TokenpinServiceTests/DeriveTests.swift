import Foundation
import Testing
import TokenpinCore
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// The key a `derive` released, in hex, or nil when it released none.
func derivedHex(
    _ service: PINService, _ answers: [String], app: String = "restic", method: VerificationMethod? = nil
) throws -> String? {
    var result = try service.derive(
        ScriptedInteraction(answers), application: #require(ApplicationName(app)), method: method)
    guard let key = result.key.take() else { return nil }
    #expect(key.count == 32)
    return key.withUnsafeBytes {
        $0.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}

/// Whether a `derive` released a key.
func released(_ result: borrowing DerivedKey) -> Bool { result.key != nil }

/// `derive`: a verification exactly like `verify`, then the application key, which only a success releases and which
/// lasts as long as the vault key.
@Suite struct DeriveTests {
    @Test func theRightPINReleasesTheSameKeyEachTimeAndOnePerApplication() throws {
        let service = makeService()
        try enrol(service)
        let first = try #require(try derivedHex(service, ["482916"]))
        #expect(try derivedHex(service, ["482916"]) == first)
        let ssh = try #require(try derivedHex(service, ["482916"], app: "ssh:work"))
        #expect(ssh != first)
        #expect(try service.store.load(user: "alice")?.counter.remaining == 5)
    }

    @Test func aWrongPINReleasesNothingAndCounts() throws {
        let service = makeService()
        try enrol(service)
        let script = ScriptedInteraction(["000001"])
        let result = try service.derive(script, application: #require(ApplicationName("restic")), method: nil)
        #expect(result.report.outcome == .rejected(remaining: 4, lastTry: false))
        let gotKey = released(result)
        #expect(!gotKey)
        #expect(script.prompts == [.pin])
        #expect(try service.store.load(user: "alice")?.counter.remaining == 4)
    }

    @Test func aLockedPINReleasesNothingAndAsksNothing() throws {
        let service = makeService(retries: 2)
        try enrol(service)
        #expect(try derivedHex(service, ["000001"]) == nil)
        #expect(try derivedHex(service, ["000002"]) == nil)
        let script = ScriptedInteraction(["482916"])
        let result = try service.derive(script, application: #require(ApplicationName("restic")), method: nil)
        #expect(result.report.outcome == .locked)
        let gotKey = released(result)
        #expect(!gotKey)
        #expect(script.prompts.isEmpty)
    }

    @Test func notEnrolledIsTheErrorVerifyGives() throws {
        let service = makeService()
        #expect {
            _ = try derivedHex(service, ["482916"])
        } throws: { error in
            if case .notEnrolled = error as? ServiceError { return true }
            return false
        }
    }

    @Test func keysSurviveChangeAndResetButNotANewEnrolment() throws {
        let service = makeService()
        let recovery = try enrol(service)
        let key = try #require(try derivedHex(service, ["482916"]))
        _ = try service.change(ScriptedInteraction(["482916", "739154", "739154"]))
        #expect(try derivedHex(service, ["739154"]) == key)
        _ = try service.reset(ScriptedInteraction([recovery, "915372", "915372"]))
        #expect(try derivedHex(service, ["915372"]) == key)
        _ = try service.unenrol(ScriptedInteraction(["915372"]), method: nil, administrator: false)
        try enrol(service)
        let renewed = try #require(try derivedHex(service, ["482916"]))
        #expect(renewed != key, "a new record has a new vault key")
        let replaced = try service.administratorReset(ScriptedInteraction(["739154", "739154"]))
        _ = replaced
        #expect(try derivedHex(service, ["739154"]).map { $0 != renewed } == true)
    }

    @Test func theCardReleasesTheSameKeyAsThePIN() throws {
        let setup = try tokenSetup()
        let byPIN = try #require(try derivedHex(setup.service, ["482916"], method: .pin))
        let script = ScriptedInteraction([cardPIN])
        let result = try setup.service.derive(script, application: #require(ApplicationName("restic")), method: nil)
        #expect(result.report.outcome == .verified(method: .token))
        #expect(script.prompts.map(\.name) == ["card-pin"])
        #expect(try derivedHex(setup.service, [cardPIN]) == byPIN)
        // Re-binding the token keeps the vault key, so the key.
        _ = try setup.service.disableToken(ScriptedInteraction(["482916"]), method: nil)
        var binder = setup.service
        binder.selection = CardSelection(serial: "00001111")
        _ = try binder.enableToken(
            ScriptedInteraction(["482916", cardPIN, adminPIN]), generateKey: true, assumeYes: true)
        #expect(try derivedHex(setup.service, [cardPIN]) == byPIN)
    }

    @Test func aPulledCardFallsBackToThePINAndAWrongCardPINReleasesNothing() throws {
        let setup = try tokenSetup()
        let byPIN = try #require(try derivedHex(setup.service, ["482916"], method: .pin))
        setup.card.remove()
        let script = ScriptedInteraction(["482916"])
        let result = try setup.service.derive(script, application: #require(ApplicationName("restic")), method: nil)
        #expect(result.report.outcome == .verified(method: .pin))
        #expect(result.report.tokenFailure != nil)
        #expect(script.prompts == [.pin])
        setup.card.insert()
        #expect(try derivedHex(setup.service, ["654321"], method: .token) == nil)
        #expect(try setup.service.store.load(user: "alice")?.counter.remaining == 5, "a card failure costs no PIN try")
        _ = byPIN
    }

    @Test func modeBothReleasesAfterThePINAndTheCard() throws {
        let setup = try tokenSetup(mode: .both)
        let script = ScriptedInteraction(["482916", cardPIN])
        let result = try setup.service.derive(script, application: #require(ApplicationName("age")), method: nil)
        #expect(result.report.outcome == .verified(method: .both))
        let gotKey = released(result)
        #expect(gotKey)
        #expect(script.prompts.map(\.name) == ["pin", "card-pin"])
        #expect(try derivedHex(setup.service, ["000001", cardPIN], app: "age") == nil)
    }

    @Test func logsNameTheApplicationNeverTheKey() throws {
        let capture = LogCapture()
        let service = makeService(logger: capture.logger())
        try enrol(service)
        let key = try #require(try derivedHex(service, ["482916"]))
        let lines = capture.lines.joined(separator: "\n")
        #expect(lines.contains("key released"))
        #expect(lines.contains("restic"))
        #expect(!lines.contains(key))
        #expect(!lines.contains(String(key.prefix(16))))
    }
}

/// The site's rules for an application (`derive`, `app.NAME.method`, `app.NAME.callers`), before anything is asked.
@Suite struct DerivePolicyTests {
    func configured(_ service: PINService, _ text: String) throws -> PINService {
        var configuration = service.configuration
        try configuration.apply(text: text, file: "apps.conf")
        var service = service
        service = PINService(
            store: service.store, configuration: configuration, user: service.user, time: service.time,
            cards: service.cards)
        return service
    }

    func refusal(_ service: PINService, _ answers: [String], app: String = "restic", method: VerificationMethod? = nil)
        -> (ServiceError?, [String])
    {
        let script = ScriptedInteraction(answers)
        do {
            _ = try service.derive(script, application: ApplicationName(app)!, method: method)
            return (nil, script.prompts.map(\.name))
        } catch {
            return (error, script.prompts.map(\.name))
        }
    }

    @Test func offIsRefusedBeforeAnyPromptAndCountsNothing() throws {
        let base = makeService()
        try enrol(base)
        let service = try configured(base, "derive = off\napp.restic.derive = on\n")
        let (error, prompts) = refusal(service, ["000001"], app: "age")
        #expect(error?.code == "permission-denied" && prompts.isEmpty, "\(String(describing: error))")
        #expect(try derivedHex(service, ["482916"], app: "restic") != nil)
        let off = try configured(base, "app.restic.derive = off\n")
        #expect(refusal(off, ["000001"]).0?.code == "permission-denied")
        #expect(try base.store.load(user: "alice")?.counter.remaining == 5)
    }

    @Test func rootOnlyCallers() throws {
        let base = makeService()
        try enrol(base)
        var service = try configured(base, "app.login-keyring.callers = root\n")
        service.callerIsRoot = false
        let (error, prompts) = refusal(service, ["482916"], app: "login-keyring")
        #expect(error?.code == "permission-denied" && prompts.isEmpty)
        service.callerIsRoot = true
        #expect(try derivedHex(service, ["482916"], app: "login-keyring") != nil)
        #expect(try derivedHex(service, ["482916"], app: "restic").map { _ in true } == true)
    }

    @Test func methodTokenNeedsTheCardAndNeverFallsBack() throws {
        let setup = try tokenSetup()
        let service = try configured(setup.service, "app.ssh:work.method = token\n")
        #expect(refusal(service, ["482916"], app: "ssh:work", method: .pin).0?.code == "permission-denied")
        let script = ScriptedInteraction([cardPIN])
        let result = try service.derive(script, application: #require(ApplicationName("ssh:work")), method: nil)
        #expect(result.report.outcome == .verified(method: .token))
        let gotKey = released(result)
        #expect(gotKey)
        setup.card.remove()
        let (error, prompts) = refusal(service, ["482916"], app: "ssh:work")
        #expect(error?.code == "token-unavailable", "no fallback to the PIN: \(String(describing: error))")
        #expect(!prompts.contains("pin"))
        // Without a bound card there is nothing to verify with.
        let pinOnly = makeService()
        try enrol(pinOnly)
        let plain = try configured(pinOnly, "app.ssh:work.method = token\n")
        #expect(refusal(plain, ["482916"], app: "ssh:work").0?.code == "token-unavailable")
    }

    @Test func methodBothAsksThePINAndTheCardOverABindingInEither() throws {
        let setup = try tokenSetup()
        let byPIN = try #require(try derivedHex(setup.service, ["482916"], app: "backup", method: .pin))
        let service = try configured(setup.service, "app.backup.method = both\n")
        let script = ScriptedInteraction(["482916", cardPIN])
        var result = try service.derive(script, application: #require(ApplicationName("backup")), method: nil)
        #expect(result.report.outcome == .verified(method: .both))
        #expect(script.prompts.map(\.name) == ["pin", "card-pin"])
        guard let key = result.key.take() else {
            Issue.record("no key released")
            return
        }
        let hex = key.withUnsafeBytes { bytes in bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex == byPIN)
        #expect(try derivedHex(service, ["000001", cardPIN], app: "backup") == nil)
    }
}
