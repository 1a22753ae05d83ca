import Foundation
import Synchronization
import Testing
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinTestSupport

@testable import TokenpinDaemon

/// `derive` through tokenpind: the key crosses the socket once, in the result; the event and the log name the
/// application only; PAM's remote and other classes may not ask; a malformed request is a protocol error.
@Suite(.serialized) struct DeriveDaemonTests {
    func hex(_ result: consuming DerivedKey) -> String? {
        guard let key = result.key.take() else { return nil }
        return key.withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
    }

    @Test func theKeyComesBackAsInProcessAndOnlyAfterASuccess() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        let client = test.client
        _ = try client.enrol(ScriptedInteraction(["482916", "482916"]))
        let restic = try #require(ApplicationName("restic"))
        let received = Mutex<[WatchedEvent]>([])
        let done = DispatchSemaphore(value: 0)
        let subscribed = DispatchSemaphore(value: 0)
        Thread {
            try? client.watch { event in
                received.withLock { $0.append(event) }
                return received.withLock { $0.count } < 2
            } onSubscribed: { _ in
                subscribed.signal()
            }
            done.signal()
        }.start()
        #expect(subscribed.wait(timeout: .now() + 30) == .success)
        let key = try #require(
            hex(try client.derive(ScriptedInteraction(["482916"]), application: restic, method: nil)))
        let wrong = try client.derive(ScriptedInteraction(["000001"]), application: restic, method: nil)
        #expect(wrong.report.outcome == .rejected(remaining: 4, lastTry: false))
        #expect(hex(wrong) == nil)
        #expect(done.wait(timeout: .now() + 5) == .success)
        let events = received.withLock { $0 }
        #expect(
            events.map(\.name) == ["verified", "key-released"] || events.map(\.name) == ["key-released", "verified"])
        let released = try #require(events.first { $0.name == "key-released" })
        #expect(released.fields.contains(JSONMember("app", .text("restic"))))
        #expect(!released.jsonLine.contains(key))
        // The same key the service derives from the same record in this process.
        let local = PINService(
            store: RecordStore(directory: test.directory + "/state"), configuration: test.daemon.configuration,
            user: "root")
        #expect(hex(try local.derive(ScriptedInteraction(["482916"]), application: restic, method: nil)) == key)
        let logs = test.logs.lines.joined(separator: "\n")
        #expect(logs.contains("key released"))
        #expect(!logs.contains(key) && !logs.contains(String(key.prefix(12))))
    }

    @Test func pamsRemoteAndOtherClassesMayNotDerive() throws {
        let test = try TestDaemon(config: "pam-remote = pin\n")
        defer { test.stop() }
        _ = try test.client(for: "nobody").enrol(ScriptedInteraction(["482916", "482916"]))
        for invoker in [Invoker(uid: 4242, service: "su"), Invoker(uid: 0, service: "sshd", rhost: "203.0.113.9")] {
            var client = test.client(for: "nobody")
            client.invoker = invoker
            let script = ScriptedInteraction(["482916"])
            #expect {
                _ = try client.derive(script, application: #require(ApplicationName("restic")), method: nil)
            } throws: { ($0 as? ServiceError)?.code == "permission-denied" }
            #expect(script.prompts.isEmpty, "\(invoker)")
        }
        #expect(try test.client(for: "nobody").perform(TokenpinProtocol.Operation.Status()).remaining == 5)
    }

    @Test(arguments: [
        (#"{"v":3,"type":"request","op":"derive"}"#, "protocol-missing-field"),
        (#"{"v":3,"type":"request","op":"derive","applicationName":"Bad"}"#, "protocol-bad-field"),
        (#"{"v":3,"type":"request","op":"derive","applicationName":"../etc"}"#, "protocol-bad-field"),
        (#"{"v":3,"type":"request","op":"derive","applicationName":""}"#, "protocol-bad-field"),
        (#"{"v":3,"type":"request","op":"derive","applicationName":7}"#, "protocol-bad-field"),
        (#"{"v":3,"type":"request","op":"derive","applicationName":"restic","method":"both"}"#, "protocol-bad-field"),
        (#"{"v":3,"type":"request","op":"verify","applicationName":"restic"}"#, "protocol-unknown-field"),
    ])
    func malformedRequestsAreProtocolErrors(line: String, code: String) throws {
        let test = try TestDaemon()
        defer { test.stop() }
        let answer = try test.raw(Array((line + "\n").utf8))
        #expect(answer.contains(code), "\(answer)")
    }

    @Test func theRequestRoundTrips() throws {
        let request = Request(.derive(.init(application: try #require(ApplicationName("ssh:work")), method: .token)))
        guard case .request(let parsed) = try ClientMessage.parse(ClientMessage.request(request).line) else {
            Issue.record("not a request")
            return
        }
        #expect(parsed == request)
    }
}
