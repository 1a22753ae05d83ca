import Foundation
import Testing
import TokenpinCore
import TokenpinDaemon
import TokenpinProtocol
import TokenpinService
import TokenpinTestSupport

/// A record with hostile numbers, imported or found in the state directory, gets a `bad data` answer and the daemon
/// keeps serving: no input traps it.
@Suite(.serialized) struct HostileRecordDaemonTests {
    /// A local record for root, as bytes, with `edit` applied to its JSON object.
    func record(in test: TestDaemon, _ edit: (inout [String: Any]) -> Void) throws -> [UInt8] {
        let local = test.directory + "/local-" + UUID().uuidString
        var configuration = Configuration()
        configuration.kdfMemoryMiB = 8
        configuration.kdfPasses = 1
        let service = PINService(store: RecordStore(directory: local), configuration: configuration, user: "root")
        _ = try service.enrol(ScriptedInteraction(["482916", "482916"]))
        var object = try #require(RecordFiles.object(atPath: local + "/root.json"))
        edit(&object)
        return [UInt8](try JSONSerialization.data(withJSONObject: object))
    }

    static func setPINMemory(_ object: inout [String: Any], _ value: Int) {
        var slots = object["slots"] as? [[String: Any]] ?? []
        var kdf = slots[0]["kdf"] as? [String: Any] ?? [:]
        kdf["memoryKiB"] = value
        slots[0]["kdf"] = kdf
        object["slots"] = slots
    }

    static func setCounter(_ object: inout [String: Any], _ key: String, _ value: Int) {
        var counter = object["counter"] as? [String: Any] ?? [:]
        counter[key] = value
        object["counter"] = counter
    }

    func expectBadData(_ body: () throws -> Void, naming field: String) {
        do {
            try body()
            Issue.record("a record with a hostile \(field) was accepted")
        } catch let error as ServiceError {
            #expect(ExitCode(error) == .dataError, "\(error)")
            #expect(error.code == "store-corrupt", "\(error)")
            #expect("\(error.message)".contains(field) || "\(error)".contains(field), "\(error)")
        } catch {
            Issue.record("not a service error: \(error)")
        }
    }

    @Test func hostileImportsAreBadDataAndTheDaemonKeepsServing() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        let hostile: [(String, (inout [String: Any]) -> Void)] = [
            ("kdf.memoryKiB", { Self.setPINMemory(&$0, Int.max) }),
            ("kdf.memoryKiB", { Self.setPINMemory(&$0, Int.min) }),
            ("counter.failures", { Self.setCounter(&$0, "failures", Int.max) }),
            ("counter.recoveryFailures", { Self.setCounter(&$0, "recoveryFailures", Int.max) }),
            ("counter.remaining", { Self.setCounter(&$0, "remaining", Int.min) }),
            ("counter.max", { Self.setCounter(&$0, "max", Int.max) }),
        ]
        for (field, edit) in hostile {
            let bytes = try record(in: test, edit)
            expectBadData({ _ = try test.client.importRecord(bytes) }, naming: field)
            #expect(try test.client.perform(TokenpinProtocol.Operation.Ping()) == ProtocolLimits.version)
        }
        // Nothing was stored: a good record still imports and verifies.
        _ = try test.client.importRecord(try record(in: test) { _ in })
        #expect(try test.client.verify(ScriptedInteraction(["482916"])).outcome == .verified(method: .pin))
    }

    @Test func aHostileRecordInTheStateDirectoryIsBadDataOnEveryRequest() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        let bytes = try record(in: test) { Self.setCounter(&$0, "failures", Int.max) }
        try RecordFiles.write(json: Data(bytes), toPath: test.directory + "/state/root.json")
        for _ in 0..<3 {
            expectBadData({ _ = try test.client.verify(ScriptedInteraction(["482916"])) }, naming: "counter.failures")
            #expect(try test.client.perform(TokenpinProtocol.Operation.Ping()) == ProtocolLimits.version)
        }
    }

    @Test func datesAtTheEndsOfTheCalendarAreServedWithoutTrapping() throws {
        let test = try TestDaemon(config: "fail-delay = 0,30\n")
        defer { test.stop() }
        let bytes = try record(in: test) { object in
            var counter = object["counter"] as? [String: Any] ?? [:]
            counter["failures"] = 1
            counter["remaining"] = 4
            counter["lastAttemptAt"] = "9999-12-31T23:59:59Z"
            counter["lockedAt"] = "0001-01-01T00:00:00Z"
            object["counter"] = counter
            object["updated"] = "9999-12-31T23:59:59Z"
        }
        _ = try test.client.importRecord(bytes)
        let status = try test.client.perform(TokenpinProtocol.Operation.Status())
        #expect(status.remaining == 4)
        #expect(status.delaySeconds == 0)  // one failure: the schedule's first entry, no pause
        #expect(
            try test.client.verify(ScriptedInteraction(["000000"])).outcome == .rejected(remaining: 3, lastTry: false))
        // Two failures now, the last one just made: the second entry's pause, never more.
        let delayed = try test.client.perform(TokenpinProtocol.Operation.Status())
        #expect((1...30).contains(delayed.delaySeconds))
        #expect(try test.client.perform(TokenpinProtocol.Operation.Ping()) == ProtocolLimits.version)
    }
}
