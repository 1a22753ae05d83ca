import Foundation
import Testing
import TokenpinCore
import TokenpinTestSupport

@testable import TokenpinService

/// `pin-check = PROGRAM`: the site's own check of each new PIN, after the built-in policy.
@Suite struct SiteCheckTests {
    let directory = NSTemporaryDirectory() + "/tokenpin-site-check-\(UUID().uuidString)"
    let year = String(Calendar(identifier: .gregorian).component(.year, from: Date()))
    var refusal: String { "ends in the current year (\(year))" }
    var yearPIN: String { "739" + year }

    init() throws {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
    }

    /// A service whose `pin-check` is a script with `body` (by default: refuse PINs ending in the current year).
    func service(_ body: String? = nil, timeoutSeconds: Int = 5) throws -> PINService {
        let script = try executableScript(body ?? currentYearPINCheck, in: directory, prefix: "check")
        var service = makeService()
        var configuration = service.configuration
        configuration.pinCheckProgram = script
        configuration.pinCheckTimeoutSeconds = timeoutSeconds
        service = PINService(store: service.store, configuration: configuration, user: service.user, time: service.time)
        return service
    }

    @Test func enrolIsRefusedWithTheProgramsReasonAndNothingIsSaved() throws {
        let service = try service()
        let script = ScriptedInteraction([yearPIN, yearPIN])
        #expect(throws: ServiceError.siteCheckRefused(reason: refusal)) { _ = try service.enrol(script) }
        #expect(script.events == [.policyViolation(rule: "site-check", reason: refusal)])
        #expect(script.prompts == [.newPIN], "refused before the confirmation is asked")
        #expect(try service.store.load(user: "alice") == nil)
        #expect(ExitCode(.siteCheckRefused(reason: refusal)) == .policy)
    }

    @Test func aTerminalMayTryAnotherPIN() throws {
        let service = try service()
        let script = ScriptedInteraction([yearPIN, "482916", "482916"], newPINAttempts: 3)
        _ = try service.enrol(script)
        #expect(script.events == [.policyViolation(rule: "site-check", reason: refusal), .created])
        #expect(try verify(service, "482916") == .verified(method: .pin))
    }

    @Test func theBuiltInPolicyRunsFirst() throws {
        let marker = directory + "/ran"
        let service = try service("touch \(marker); echo no; exit 1")
        #expect(throws: ServiceError.policyViolation(.sequence)) {
            _ = try service.enrol(ScriptedInteraction(["123456"]))
        }
        #expect(!FileManager.default.fileExists(atPath: marker), "the program never saw a PIN the policy refused")
    }

    @Test func changeAndResetAreCheckedToo() throws {
        let service = try service()
        let recovery = try enrol(service)
        #expect(throws: ServiceError.siteCheckRefused(reason: refusal)) {
            _ = try service.change(ScriptedInteraction(["482916", yearPIN, yearPIN]))
        }
        #expect(try verify(service, "482916") == .verified(method: .pin), "the old PIN still works")
        #expect(throws: ServiceError.siteCheckRefused(reason: refusal)) {
            _ = try service.reset(ScriptedInteraction([recovery, yearPIN, yearPIN]))
        }
        #expect(try verify(service, "482916") == .verified(method: .pin))
        #expect(
            try service.change(ScriptedInteraction(["482916", "739154", "739154"])).outcome == .verified(method: .pin))
    }

    @Test(arguments: ["exit 2", "kill -SEGV $$", "sleep 30"])
    func noVerdictIsAConfigurationErrorAndSavesNothing(body: String) throws {
        let service = try service(body, timeoutSeconds: 1)
        let error = #expect(throws: ServiceError.self) {
            _ = try service.enrol(ScriptedInteraction(["482916", "482916"]))
        }
        guard case .configuration(let detail)? = error else {
            Issue.record("expected a configuration error, got \(String(describing: error))")
            return
        }
        #expect(detail.contains("pin-check: ") && detail.contains("/check-"), "names the program: \(detail)")
        #expect(ExitCode(error!) == .configuration)
        #expect(try service.store.load(user: "alice") == nil)
    }

    @Test func aRightRecoveryKeyIsNotCountedWhenTheCheckFails() throws {
        let service = try service("exit 3")
        var configuration = service.configuration
        configuration.pinCheckProgram = nil
        let plain = PINService(store: service.store, configuration: configuration, user: "alice", time: service.time)
        let recovery = try enrol(plain)
        let error = #expect(throws: ServiceError.self) {
            _ = try service.reset(ScriptedInteraction([recovery, "739154", "739154"]))
        }
        #expect(error?.code == "configuration")
        #expect(try service.store.load(user: "alice")?.counter.recoveryFailures == 0)
        #expect(try verify(service, "482916") == .verified(method: .pin), "the PIN was not reset")
    }

    @Test func aMissingProgramIsAConfigurationErrorAtChange() throws {
        var service = try service()
        try enrol(service)
        var configuration = service.configuration
        configuration.pinCheckProgram = directory + "/missing"
        service = PINService(store: service.store, configuration: configuration, user: service.user, time: service.time)
        let error = #expect(throws: ServiceError.self) {
            _ = try service.change(ScriptedInteraction(["482916", "739154", "739154"]))
        }
        #expect(error?.code == "configuration")
        #expect(try verify(service, "482916") == .verified(method: .pin), "the PIN was not changed")
    }
}
