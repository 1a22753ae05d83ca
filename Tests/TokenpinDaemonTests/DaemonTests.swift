import Foundation
import Synchronization
import Testing
import TokenpinCore
import TokenpinDaemon
import TokenpinProtocol
import TokenpinService
import TokenpinTestSupport

@Suite struct AuthorizationTests {
    let alice = Peer(pid: 10, uid: 1000, gid: 1000, name: "alice")
    let root = Peer(pid: 1, uid: 0, gid: 0, name: "root")

    @Test func userActsOnOwnRecordOnly() throws {
        #expect(try Authorization.target(peer: alice, requested: nil).get() == "alice")
        #expect(try Authorization.target(peer: alice, requested: "alice").get() == "alice")
        guard case .failure(let error) = Authorization.target(peer: alice, requested: "bob") else {
            Issue.record("alice acted on bob")
            return
        }
        #expect(error.code == "permission-denied")
        #expect(ExitCode(error) == .permissionDenied)
    }

    @Test func rootMayNameAnyone() throws {
        #expect(try Authorization.target(peer: root, requested: "bob").get() == "bob")
        #expect(try Authorization.target(peer: root, requested: nil).get() == "root")
    }

    @Test func watchersSeeTheirOwnEventsRootSeesAll() {
        #expect(Authorization.sees(peer: alice, filter: "alice", eventUser: "alice"))
        #expect(!Authorization.sees(peer: alice, filter: "alice", eventUser: "bob"))
        #expect(!Authorization.sees(peer: alice, filter: nil, eventUser: "bob"))
        #expect(Authorization.sees(peer: alice, filter: "alice", eventUser: nil))  // readers and cards
        #expect(Authorization.sees(peer: root, filter: nil, eventUser: "bob"))
        #expect(!Authorization.sees(peer: root, filter: "alice", eventUser: "bob"))
    }
}

@Suite struct LimitTests {
    @Test func rateLimiterCountsPerWindow() {
        var limiter = RateLimiter(limit: 3, windowNanoseconds: 1000)
        let first = [limiter.allow(now: 10), limiter.allow(now: 20), limiter.allow(now: 30), limiter.allow(now: 40)]
        #expect(first == [true, true, true, false])
        let later = limiter.allow(now: 1011)
        #expect(later)
    }

    @Test func connectionTableLimitsPerUID() {
        let table = ConnectionTable(maximumTotal: 3, maximumPerUID: 2)
        let two = table.open(uid: 1) && table.open(uid: 1)
        #expect(two)
        #expect(!table.open(uid: 1))
        #expect(table.open(uid: 2))
        #expect(!table.open(uid: 3))
        let rootStillGetsIn = table.open(uid: 0)
        #expect(rootStillGetsIn)
        table.close(uid: 1)
        #expect(table.open(uid: 3))
    }

    @Test func budgetQueuesInsteadOfOvercommitting() async {
        let budget = MemoryBudget(capacityKiB: 100)
        let inside = Mutex((now: 0, peak: 0))
        let done = DispatchGroup()
        for _ in 0..<12 {
            done.enter()
            Thread {
                budget.acquire(40)
                inside.withLock {
                    $0.now += 40
                    $0.peak = max($0.peak, $0.now)
                }
                usleep(5000)
                inside.withLock { $0.now -= 40 }
                budget.release(40)
                done.leave()
            }.start()
        }
        done.wait()
        #expect(inside.withLock { $0.peak } <= 80)
        #expect(budget.usage.peakKiB <= 100)
        #expect(budget.usage.usedKiB == 0)
        #expect(!budget.fits(101))
        #expect(budget.fits(100))
    }

    @Test func budgetLimitsHolders() {
        let budget = MemoryBudget(capacityKiB: 1000, maximumHolders: 2)
        let inside = Mutex((now: 0, peak: 0))
        let done = DispatchGroup()
        for _ in 0..<8 {
            done.enter()
            Thread {
                budget.acquire(10)
                inside.withLock {
                    $0.now += 1
                    $0.peak = max($0.peak, $0.now)
                }
                // Each holder stays until a second one is in (or 2 s pass), so the peak never hangs on how the
                // threads happen to be scheduled.
                let deadline = Date(timeIntervalSinceNow: 2)
                while inside.withLock({ $0.peak }) < 2 && Date() < deadline { usleep(1000) }
                usleep(1000)
                inside.withLock { $0.now -= 1 }
                budget.release(10)
                done.leave()
            }.start()
        }
        done.wait()
        #expect(inside.withLock { $0.peak } == 2)
    }

    @Test func budgetServesInArrivalOrder() {
        let budget = MemoryBudget(capacityKiB: 100)
        budget.acquire(100)
        let order = Mutex<[Int]>([])
        let done = DispatchGroup()
        for index in 0..<5 {
            done.enter()
            Thread {
                budget.acquire(index == 0 ? 100 : 10)
                order.withLock { $0.append(index) }
                budget.release(index == 0 ? 100 : 10)
                done.leave()
            }.start()
            while budget.usage.waiting < index + 1 { usleep(1000) }
        }
        budget.release(100)
        done.wait()
        #expect(order.withLock { $0 }.first == 0)  // the large request was not overtaken
    }

    @Test func userLocksSerialize() {
        let locks = UserLocks()
        locks.lock("alice")
        #expect(locks.isLocked("alice"))
        #expect(!locks.isLocked("bob"))
        locks.unlock("alice")
        #expect(!locks.isLocked("alice"))
    }
}

/// A daemon in this process on a private socket and state directory, with fast KDF settings.
final class TestDaemon: Sendable {
    let directory: String
    let socket: String
    let daemon: Daemon
    let logs = LogCapture()

    init(config: String = "", adjust: (inout DaemonOptions) -> Void = { _ in }) throws {
        directory = temporaryDirectory("daemon")
        let file = directory + "/tokenpin.conf"
        // enrol-auth = none: these tests connect as whoever runs them; the password check before enrolment is
        // tested with temporary users and a PAM service of their own in Tests/EndToEnd/adversary.sh.
        try ("kdf-memory-mib = 8\nkdf-passes = 1\nenrol-auth = none\n" + config).write(
            toFile: file, atomically: true, encoding: .utf8)
        var options = DaemonOptions()
        options.socketPath = directory + "/socket"
        options.stateDirectory = directory + "/state"
        options.configFile = file
        options.journalSocket = nil  // never the machine's journal; tests that read the fields name a socket
        adjust(&options)
        socket = options.socketPath
        daemon = try Daemon(options: options, logger: logs.logger(label: "tokenpind", level: .debug))
        try daemon.listen()
        let daemon = self.daemon
        Thread { daemon.serve() }.start()
    }

    var client: DaemonClient { DaemonClient(socketPath: socket) }

    func stop() {
        daemon.beginShutdown()
        _ = daemon.waitForOperations(seconds: 5)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Sends raw bytes on a fresh connection and returns the first line of the answer.
    func raw(_ data: [UInt8], closeWrite: Bool = false) throws -> String {
        let channel = try LineChannel.connect(path: socket)
        try channel.write(data)
        if closeWrite { _ = shutdown(channel.fd, Int32(SHUT_WR)) }
        return String(decoding: try channel.readLine(timeoutMilliseconds: 5000), as: UTF8.self)
    }
}

@Suite(.serialized) struct DaemonEndToEndTests {
    @Test func everyFlowThroughTheSocket() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        let client = test.client
        #expect(try client.perform(TokenpinProtocol.Operation.Ping()) == ProtocolLimits.version)
        #expect {
            try client.verify(ScriptedInteraction(["482916"]))
        } throws: { ($0 as? ServiceError)?.code == "not-enrolled" }
        let enrolment = try client.enrol(ScriptedInteraction(["482916", "482916"]))
        #expect(enrolment.recoveryKeyText.count == 35)
        let recovery = enrolment.recoveryKeyText.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(try client.verify(ScriptedInteraction(["482916"])).outcome == .verified(method: .pin))
        let wrong = try client.verify(ScriptedInteraction(["000000"]))
        #expect(wrong.outcome == .rejected(remaining: 4, lastTry: false))
        #expect(try client.perform(TokenpinProtocol.Operation.Status()).remaining == 4)
        let change = try client.change(ScriptedInteraction(["482916", "739154", "739154"]))
        #expect(change.outcome == .verified(method: .pin))
        #expect(try client.verify(ScriptedInteraction(["739154"])).outcome == .verified(method: .pin))
        #expect(throws: ServiceError.pinAlwaysEnabled) { try client.toggle(.pin, on: false, ScriptedInteraction([])) }
        #expect(try client.perform(TokenpinProtocol.Operation.Types()).count == 2)
        for _ in 0..<5 { _ = try client.verify(ScriptedInteraction(["000000"])) }
        #expect(try client.verify(ScriptedInteraction(["739154"])).outcome == .locked)
        let reset = try client.reset(ScriptedInteraction([recovery, "615283", "615283"]))
        #expect(reset.outcome == .verified(method: .recovery))
        #expect(try client.verify(ScriptedInteraction(["615283"])).outcome == .verified(method: .pin))
        let joined = test.logs.lines.joined(separator: "\n")
        for secret in ["482916", "739154", "615283", recovery] { #expect(!joined.contains(secret)) }
    }

    @Test func policyRefusalIsTheSameError() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        #expect(throws: ServiceError.policyViolation(.sequence)) {
            _ = try test.client.enrol(ScriptedInteraction(["123456", "123456"]))
        }
    }

    @Test func badRequestsGetErrorsWhileOthersAreServed() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        _ = try test.client.enrol(ScriptedInteraction(["482916", "482916"]))
        // A half-finished request held open must not block anyone.
        let stalled = try LineChannel.connect(path: test.socket)
        try stalled.write(Array("{\"v\":1,\"type\":\"requ".utf8))
        #expect(try test.raw(Array("garbage\n".utf8)).contains("protocol-malformed"))
        #expect(try test.raw([UInt8](repeating: 0x7B, count: 70_000) + [0x0A]).contains("protocol-oversized"))
        #expect(
            try test.raw(Array("{\"v\":1,\"type\":\"request\"".utf8), closeWrite: true).contains("protocol-truncated"))
        #expect(
            try test.raw(Array("{\"v\":1,\"type\":\"secret\",\"prompt\":\"pin\",\"value\":\"1\"}\n".utf8))
                .contains("protocol-unexpected"))
        #expect(try test.client.verify(ScriptedInteraction(["482916"])).outcome == .verified(method: .pin))
        #expect(try test.client.perform(TokenpinProtocol.Operation.Status()).remaining == 5)  // nothing above counted
        stalled.close()
    }

    @Test func disconnectAtThePromptCountsNothing() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        _ = try test.client.enrol(ScriptedInteraction(["482916", "482916"]))
        let channel = try LineChannel.connect(path: test.socket)
        try channel.send(ClientMessage.request(Request(.verify(.init()))))
        _ = try channel.readLine(timeoutMilliseconds: 5000)  // the prompt
        channel.close()
        usleep(300_000)
        #expect(try test.client.perform(TokenpinProtocol.Operation.Status()).remaining == 5)
    }

    @Test func disconnectAfterThePINLeavesACompletedAttempt() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        _ = try test.client.enrol(ScriptedInteraction(["482916", "482916"]))
        let channel = try LineChannel.connect(path: test.socket)
        try channel.send(ClientMessage.request(Request(.verify(.init()))))
        _ = try channel.readLine(timeoutMilliseconds: 5000)
        try channel.send(ClientMessage.secret(prompt: "pin", value: Array("000000".utf8)))
        channel.close()  // gone before the result
        var remaining = 5
        for _ in 0..<50 where remaining == 5 {
            usleep(100_000)
            remaining = try test.client.perform(TokenpinProtocol.Operation.Status()).remaining ?? -1
        }
        #expect(remaining == 4)
        #expect(test.daemon.waitForOperations(seconds: 5))
    }

    @Test func importRefusesToReplaceADaemonRecord() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        // A local record made by the service in a private store.
        let local = test.directory + "/local"
        var configuration = Configuration()
        configuration.kdfMemoryMiB = 8
        configuration.kdfPasses = 1
        let service = PINService(store: RecordStore(directory: local), configuration: configuration, user: "root")
        _ = try service.enrol(ScriptedInteraction(["482916", "482916"]))
        let data = try [UInt8](#require(RecordFiles.json(atPath: local + "/root.json")))
        _ = try test.client.importRecord(data)
        #expect(try test.client.verify(ScriptedInteraction(["482916"])).outcome == .verified(method: .pin))
        _ = try test.client.verify(ScriptedInteraction(["000000"]))
        #expect { try test.client.importRecord(data) } throws: { ($0 as? ServiceError)?.code == "already-enrolled" }
        // The fresh counter of the copy did not come back.
        #expect(try test.client.perform(TokenpinProtocol.Operation.Status()).remaining == 4)
        var other = DaemonClient(socketPath: test.socket)
        other.user = "bob"
        // root's record is not bob's
        #expect { try other.importRecord(data) } throws: { ($0 as? ServiceError)?.code == "store-corrupt" }
    }

    @Test func oversizedSlotIsRefusedByTheBudget() throws {
        let test = try TestDaemon(config: "daemon-kdf-memory = 8M\nkdf-memory-mib = 16\n")
        defer { test.stop() }
        #expect {
            _ = try test.client.enrol(ScriptedInteraction(["482916", "482916"]))
        } throws: { ($0 as? ServiceError)?.code == "configuration" }
    }

    @Test func watchersReceiveEvents() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        _ = try test.client.enrol(ScriptedInteraction(["482916", "482916"]))
        let received = Mutex<[String]>([])
        let client = test.client
        let done = DispatchSemaphore(value: 0)
        let subscribed = DispatchSemaphore(value: 0)
        let scope = Mutex<String?>("unset")
        Thread {
            try? client.watch { event in
                received.withLock { $0.append(event.name) }
                return received.withLock { $0.count } < 2
            } onSubscribed: { user in
                scope.withLock { $0 = user }
                subscribed.signal()
            }
            done.signal()
        }.start()
        #expect(subscribed.wait(timeout: .now() + 30) == .success)
        #expect(scope.withLock { $0 } == nil, "root without a user watches everyone")
        // Right after the confirmation, with no pause: the subscriber is registered, so nothing is lost.
        _ = try client.verify(ScriptedInteraction(["000000"]))
        _ = try client.verify(ScriptedInteraction(["482916"]))
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(received.withLock { $0 } == ["wrongPIN", "verified"])
    }

    /// Issue 19: `onSubscribed` names whose events follow, and is called before any event sent after it.
    @Test func theConfirmationNamesTheUserAndComesBeforeTheNextEvent() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        _ = try test.client.enrol(ScriptedInteraction(["482916", "482916"]))
        let client = test.client(for: "root")
        let log = Mutex<[String]>([])
        let subscribed = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            try? client.watch { event in
                log.withLock { $0.append(event.name) }
                return false
            } onSubscribed: { user in
                log.withLock { $0.append("subscribed \(user ?? "*")") }
                subscribed.signal()
            }
            done.signal()
        }.start()
        #expect(subscribed.wait(timeout: .now() + 30) == .success)
        _ = try test.client.verify(ScriptedInteraction(["482916"]))
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(log.withLock { $0 } == ["subscribed root", "verified"])
    }

    @Test func reloadKeepsOldSettingsOnABrokenFile() throws {
        let test = try TestDaemon()
        defer { test.stop() }
        #expect(test.daemon.reload())
        try "bogus-key = 1\n".write(toFile: test.directory + "/tokenpin.conf", atomically: true, encoding: .utf8)
        #expect(!test.daemon.reload())
        #expect(test.daemon.configuration.kdfMemoryMiB == 8)
    }
}
