import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore
@testable import TokenpinService

struct TestFault: Error {}

func makeService(
    retries: Int = 5, failDelay: [Int] = [], time: ManualTime = ManualTime(),
    logger: Logger = .disabled, hooks: PINService.Hooks = .init()
) -> PINService {
    var configuration = Configuration()
    configuration.kdfMemoryMiB = 8
    configuration.kdfPasses = 1
    configuration.retriesMax = retries
    configuration.failDelay = failDelay
    let directory = temporaryDirectory("service") + "/store"  // not created: status must not create it
    return PINService(
        store: RecordStore(directory: directory), configuration: configuration, user: "alice",
        time: time, logger: logger, hooks: hooks)
}

/// Enrols "482916" and returns the recovery key's text.
@discardableResult
func enrol(_ service: PINService, pin: String = "482916") throws -> String {
    let result = try service.enrol(ScriptedInteraction([pin, pin]))
    return result.recoveryKeyText.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
}

func verify(_ service: PINService, _ pin: String) throws -> VerifyOutcome {
    try service.verifyPIN(ScriptedInteraction([pin])).outcome
}

@Suite struct EnrolTests {
    @Test func asksTwiceAndSavesPINAndRecoverySlots() throws {
        let service = makeService()
        let script = ScriptedInteraction(["482916", "482916"])
        let result = try service.enrol(script)
        #expect(script.prompts == [.newPIN, .confirmPIN])
        #expect(script.events == [.created])
        #expect(result.kdf == .argon2id(memoryKiB: 8192, passes: 1).with(salt: result.kdf.salt))
        let record = try #require(try service.store.load(user: "alice"))
        #expect(record.slots.map(\.kind) == [.pin, .recovery])
        #expect(record.counter == RetryCounter(max: 5))
    }

    @Test func refusesASecondEnrolment() throws {
        let service = makeService()
        try enrol(service)
        #expect(throws: ServiceError.alreadyEnrolled(user: "alice", path: service.recordPath)) {
            _ = try service.enrol(ScriptedInteraction(["739154", "739154"]))
        }
    }

    @Test func policyAndMismatchAreRefusedWithTheRule() throws {
        let service = makeService()
        #expect(throws: ServiceError.policyViolation(.sequence)) {
            _ = try service.enrol(ScriptedInteraction(["123456"]))
        }
        #expect(throws: ServiceError.policyViolation(.mismatch)) {
            _ = try service.enrol(ScriptedInteraction(["482916", "482917"]))
        }
        #expect(try service.store.load(user: "alice") == nil, "nothing saved")
    }

    @Test func aTerminalGetsThreeChances() throws {
        let service = makeService()
        let script = ScriptedInteraction(["111111", "482916", "482917", "482916", "482916"], newPINAttempts: 3)
        _ = try service.enrol(script)
        #expect(script.events == [.policyViolation(rule: "min-unique"), .policyViolation(rule: "mismatch"), .created])
        #expect(script.prompts == [.newPIN, .newPIN, .confirmPIN, .newPIN, .confirmPIN])
    }
}

extension KDFParameters {
    func with(salt: Data) -> KDFParameters {
        var copy = self
        copy.salt = salt
        return copy
    }
}

@Suite struct VerifyTests {
    @Test func rightPINVerifiesAndRestoresTheCounter() throws {
        let service = makeService()
        try enrol(service)
        #expect(try verify(service, "000001") == .rejected(remaining: 4, lastTry: false))
        #expect(try verify(service, "482916") == .verified(method: .pin))
        #expect(try service.store.load(user: "alice")?.counter.remaining == 5)
    }

    @Test func wrongPINsCountDownWarnOfTheLastTryAndLock() throws {
        let service = makeService(retries: 3)
        try enrol(service)
        #expect(try verify(service, "000001") == .rejected(remaining: 2, lastTry: false))
        #expect(try verify(service, "000002") == .rejected(remaining: 1, lastTry: true))
        #expect(try verify(service, "000003") == .locked)
        #expect(try verify(service, "482916") == .locked, "the right PIN does not open a locked vault")
        let script = ScriptedInteraction(["482916"])
        #expect(try service.verifyPIN(script).outcome == .locked)
        #expect(script.prompts.isEmpty, "a locked PIN is not even asked for")
        let status = try service.status()
        #expect(status.locked && status.remaining == 0 && status.lockedAt != nil)
    }

    @Test func notEnrolledIsAnError() {
        let service = makeService()
        #expect(throws: ServiceError.notEnrolled(user: "alice", path: service.recordPath)) {
            _ = try verify(service, "482916")
        }
    }

    /// Invariant 1: a fault right after the decrement leaves it decremented.
    @Test func faultAfterTheDecrementLeavesItCounted() throws {
        var service = makeService()
        try enrol(service)
        service.hooks.afterCounterPersisted = { throw TestFault() }
        // The hook's own error reaches the caller through the service's catch-all, as any unforeseen one would.
        #expect {
            _ = try verify(service, "482916")
        } throws: { ($0 as? ServiceError) == .input("unexpected error: TestFault()") }
        #expect(try service.store.load(user: "alice")?.counter.remaining == 4)
        #expect(try service.store.load(user: "alice")?.counter.failures == 1)
    }

    /// A failure to persist the decrement means no verification (fail closed), in either record format.
    @Test(arguments: [RecordFormat.json, .copies])
    func failureToPersistMeansNoVerification(format: RecordFormat) throws {
        let enrolled = makeService()
        var store = enrolled.store
        store.writeFormat = format
        let path = store.recordPath(for: "alice")
        try enrol(PINService(store: store, configuration: enrolled.configuration, user: "alice"))
        let before = try #require(FileManager.default.contents(atPath: path))
        switch format {
        case .json:
            // A directory where the temporary file must go makes every save fail.
            try FileManager.default.createDirectory(
                atPath: store.temporaryPath(for: "alice"), withIntermediateDirectories: false)
        case .copies:
            // The store's fault hook: the in-place write of the new copy fails before a byte of it lands.
            store.tornWrite = { _, old, _ in old }
        }
        var service = PINService(store: store, configuration: enrolled.configuration, user: "alice")
        final class Flag: @unchecked Sendable { var reached = false }  // written by one test thread only
        let flag = Flag()
        service.hooks.afterCounterPersisted = { flag.reached = true }
        #expect { _ = try verify(service, "482916") } throws: { error in
            guard case .store(let store) = error as? ServiceError else { return false }
            return store.code == .io
        }
        #expect(!flag.reached, "the KDF never ran")
        #expect(FileManager.default.contents(atPath: path) == before, "the record is as it was")
    }

    @Test func failureDelayIsEnforcedAcrossCallsWithoutSleeping() throws {
        let time = ManualTime()
        let service = makeService(retries: 10, failDelay: [0, 30, 300], time: time)
        try enrol(service)
        #expect(try verify(service, "000001") == .rejected(remaining: 9, lastTry: false))
        #expect(try verify(service, "000002") == .rejected(remaining: 8, lastTry: false))
        #expect(try verify(service, "482916") == .delayed(seconds: 30))
        time.advance(29)
        #expect(try verify(service, "482916") == .delayed(seconds: 1))
        time.advance(1)
        #expect(try verify(service, "482916") == .verified(method: .pin))
        #expect(try service.status().delaySeconds == 0)
    }

    @Test func concurrentWrongAttemptsAreCountedExactly() async throws {
        let service = makeService(retries: 5)
        try enrol(service)
        let outcomes = await withTaskGroup(of: VerifyOutcome?.self) { group in
            for index in 0..<12 {
                group.addTask { try? verify(service, "00000\(index % 10)") }
            }
            var all: [VerifyOutcome?] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        let rejected = outcomes.filter { if case .rejected = $0 { true } else { false } }.count
        let locked = outcomes.filter { $0 == .locked }.count
        #expect(rejected == 4)
        #expect(locked == 8, "the fifth wrong try locks, the rest find it locked")
        #expect(try service.store.load(user: "alice")?.counter.remaining == 0)
    }

    @Test func logsNeverCarryThePIN() throws {
        let capture = LogCapture()
        let service = makeService(logger: capture.logger())
        let recovery = try enrol(service)
        _ = try verify(service, "000001")
        _ = try verify(service, "482916")
        _ = try service.change(ScriptedInteraction(["482916", "739154", "739154"]))
        _ = try service.reset(ScriptedInteraction([recovery, "915372", "915372"]))
        #expect(!capture.lines.isEmpty)
        for secret in ["482916", "000001", "739154", "915372", recovery, String(recovery.prefix(5))] {
            #expect(!capture.lines.joined().contains(secret))
        }
    }
}

@Suite struct ChangeTests {
    @Test func asksInOrderAndKeepsTheRecoverySlotWorking() throws {
        let service = makeService()
        let recovery = try enrol(service)
        let script = ScriptedInteraction(["482916", "739154", "739154"])
        #expect(try service.change(script).outcome == .verified(method: .pin))
        #expect(script.prompts == [.currentPIN, .newPIN, .confirmPIN])
        #expect(script.events == [.changed])
        #expect(try verify(service, "482916") == .rejected(remaining: 4, lastTry: false))
        #expect(try verify(service, "739154") == .verified(method: .pin))
        #expect(
            try service.reset(ScriptedInteraction([recovery, "915372", "915372"])).outcome
                == .verified(method: .recovery))
    }

    @Test func wrongCurrentPINIsCountedAndAsksNothingMore() throws {
        let service = makeService()
        try enrol(service)
        let script = ScriptedInteraction(["000001", "739154", "739154"])
        #expect(try service.change(script).outcome == .rejected(remaining: 4, lastTry: false))
        #expect(script.prompts == [.currentPIN])
    }

    @Test func theSamePINIsRefused() throws {
        let service = makeService()
        try enrol(service)
        #expect(throws: ServiceError.policyViolation(.sameAsCurrent)) {
            _ = try service.change(ScriptedInteraction(["482916", "482916", "482916"]))
        }
        #expect(try verify(service, "482916") == .verified(method: .pin), "the old PIN still works")
    }

    @Test func cancellingAfterTheCurrentPINKeepsTheOldPIN() throws {
        let service = makeService()
        try enrol(service)
        #expect {
            _ = try service.change(ScriptedInteraction(["482916"]))
        } throws: { ($0 as? ServiceError)?.code == "input" }
        #expect(try service.store.load(user: "alice")?.counter.remaining == 5)
        #expect(try verify(service, "482916") == .verified(method: .pin))
    }
}

@Suite struct ResetTests {
    @Test func recoveryKeyClearsTheLockAndSetsANewPIN() throws {
        let service = makeService(retries: 2)
        let recovery = try enrol(service)
        _ = try verify(service, "000001")
        #expect(try verify(service, "000002") == .locked)
        let script = ScriptedInteraction([recovery, "915372", "915372"])
        #expect(try service.reset(script).outcome == .verified(method: .recovery))
        #expect(script.prompts == [.recoveryKey, .newPIN, .confirmPIN])
        #expect(try verify(service, "915372") == .verified(method: .pin))
    }

    @Test func wrongRecoveryKeysAreCountedMalformedOnesAreNot() throws {
        let service = makeService()
        try enrol(service)
        let other = RecoveryKey.format(RecoveryKey.generate()).withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(try service.reset(ScriptedInteraction([other])).outcome == .rejected(remaining: 5, lastTry: false))
        #expect(try service.store.load(user: "alice")?.counter.recoveryFailures == 1)
        #expect { _ = try service.reset(ScriptedInteraction(["not-a-key"])) } throws: { error in
            if case .malformedRecoveryKey = error as? ServiceError { return true }
            return false
        }
        #expect(try service.store.load(user: "alice")?.counter.recoveryFailures == 1)
    }
}

@Suite struct TypesTests {
    @Test func pinIsAlwaysOnAndTokenOffUntilBound() throws {
        let service = makeService()
        try enrol(service)
        let types = try service.types()
        #expect(
            types == [
                TypeStatus(type: .pin, enabled: true, canDisable: false),
                TypeStatus(type: .token, enabled: false, canDisable: true),
            ])
        #expect(throws: ServiceError.pinAlwaysEnabled) { try service.togglePIN(on: false) }
        try service.togglePIN(on: true)
    }

    @Test func statusOfAnEmptyStore() throws {
        let service = makeService()
        let status = try service.status()
        #expect(!status.enrolled && status.remaining == nil && status.types.count == 2)
        #expect(!FileManager.default.fileExists(atPath: service.store.directory), "status creates nothing")
    }

    @Test func exitCodesAreTheDocumentedOnes() {
        #expect(ExitCode.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6, 65, 69, 74, 77, 78, 127, 130])
        #expect(ExitCode(.store(StoreError(.corrupt, path: "x", ""))) == .dataError)
        #expect(ExitCode(.store(StoreError(.insecure, path: "x", ""))) == .permissionDenied)
        #expect(ExitCode(.policyViolation(.date)) == .policy)
        #expect(ExitCode(.cancelled) == .cancelled)
    }
}
