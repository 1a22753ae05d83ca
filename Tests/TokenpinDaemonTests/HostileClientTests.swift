import Foundation
import Synchronization
import Testing
import TokenpinCore
import TokenpinDaemon
import TokenpinProtocol
import TokenpinService

/// A raw client: writes protocol lines and reads answers line by line, or never reads at all.
private struct RawClient {
    let channel: LineChannel

    init(_ test: TestDaemon) throws { channel = try LineChannel.connect(path: test.socket) }

    func send(_ line: String) throws { try channel.write(Array((line + "\n").utf8)) }

    func request(_ op: String, user: String, extra: String = "") throws {
        try send(#"{"v":1,"type":"request","op":"\#(op)","user":"\#(user)"\#(extra)}"#)
    }

    func secret(_ prompt: String, _ value: String) throws {
        try send(#"{"v":1,"type":"secret","prompt":"\#(prompt)","value":"\#(value)"}"#)
    }

    /// The next message as a JSON object, or nil when the connection ends first.
    func next(timeoutMilliseconds: Int32 = 10_000) -> JSONValue? {
        guard let line = try? channel.readLine(timeoutMilliseconds: timeoutMilliseconds) else { return nil }
        return try? JSONParser.parse(line)
    }

    /// Reads until a message of `type` (`prompt`, `result`, `error`) arrives; nil when the connection ends.
    func until(_ type: String, timeoutMilliseconds: Int32 = 10_000) -> JSONValue? {
        while let message = next(timeoutMilliseconds: timeoutMilliseconds) {
            if message["type"]?.stringValue == type { return message }
        }
        return nil
    }
}

private func enrol(_ test: TestDaemon, _ user: String, pin: String = "482916") throws {
    let client = try RawClient(test)
    try client.request("enrol", user: user)
    _ = client.until("prompt")
    try client.secret("new-pin", pin)
    _ = client.until("prompt")
    try client.secret("confirm-pin", pin)
    #expect(client.until("result")?["exitCode"]?.intValue == 0)
}

extension TestDaemon {
    /// A client acting for `user` (the tests run as root, or as one user naming only itself).
    func client(for user: String) -> DaemonClient {
        var client = self.client
        client.user = user
        return client
    }
}

/// Seconds since `start`.
private func elapsed(since start: Date) -> Double { Date().timeIntervalSince(start) }

/// Issue 8, findings 2 and 3: the lock order, bounded waits, and a client that stops reading.
@Suite(.serialized) struct HostileClientTests {
    /// The PIN prompt carries the tries left from the record the operation read, not from a read of its own, and
    /// in version 2's name; the rejected result says the same number.
    @Test func thePINPromptCarriesTheRecordsTriesLeft() throws {
        let test = try TestDaemon(config: "retries-max = 4\n")
        defer { test.stop() }
        try enrol(test, "dave")
        for expected in [4, 3] {
            let client = try RawClient(test)
            try client.request("verify", user: "dave", extra: #","method":"pin""#)
            let prompt = client.until("prompt")
            #expect(prompt?["prompt"]?.stringValue == "pin")
            #expect(prompt?["remaining"]?.intValue == expected)
            #expect(prompt?["triesLeft"] == nil)
            #expect(prompt?["v"]?.intValue == ProtocolLimits.version)
            try client.secret("pin", "000000")
            let result = client.until("result")
            #expect(result?["outcome"]?.stringValue == "rejected")
            #expect(result?["remaining"]?.intValue == expected - 1)
        }
    }

    /// An `enrol` waiting at its new-PIN prompt and an `import` for the same user: on the old code the import took
    /// the user lock and waited for the enrol's `flock` forever, and the enrol then waited for the user lock.
    @Test func enrolAtPromptAndImportForTheSameUserDoNotDeadlock() throws {
        let test = try TestDaemon(config: "daemon-wait-timeout = 1\n")
        defer { test.stop() }
        let enrolling = try RawClient(test)
        try enrolling.request("enrol", user: "carol")
        #expect(enrolling.until("prompt")?["prompt"]?.stringValue == "new-pin")
        let importing = try RawClient(test)
        let record = Base64.encode(Array("{}".utf8))
        let start = Date()
        try importing.request("import", user: "carol", extra: #","record":"\#(record)""#)
        let answer = importing.until("error")
        #expect(answer?["code"]?.stringValue == "busy")
        #expect(answer?["exitCode"]?.intValue == Int(ExitCode.serviceUnavailable.rawValue))
        #expect(elapsed(since: start) < 5)
        try enrolling.secret("new-pin", "482916")
        _ = enrolling.until("prompt")
        try enrolling.secret("confirm-pin", "482916")
        #expect(enrolling.until("result")?["exitCode"]?.intValue == 0)
        #expect(!test.daemon.userLocks.isLocked("carol"))
        #expect(test.daemon.budget.usage.usedKiB == 0)
    }

    /// A PIN verify racing a verify of the same user that sits at its prompt waits a bounded time and answers
    /// `busy` without counting; the waiting operation holds no key-derivation memory.
    @Test func aPromptHoldsNoMemoryAndASecondOperationWaitsBounded() throws {
        let test = try TestDaemon(config: "daemon-wait-timeout = 1\n")
        defer { test.stop() }
        try enrol(test, "dave")
        let waiting = try RawClient(test)
        try waiting.request("verify", user: "dave")
        #expect(waiting.until("prompt")?["prompt"]?.stringValue == "pin")
        #expect(test.daemon.budget.usage.usedKiB == 0)
        let second = try RawClient(test)
        try second.request("verify", user: "dave", extra: #","method":"pin""#)
        #expect(second.until("error")?["code"]?.stringValue == "busy")
        let status = try test.client(for: "dave").perform(TokenpinProtocol.Operation.Status())
        #expect(status.remaining == 5)
        try waiting.secret("pin", "482916")
        #expect(waiting.until("result")?["exitCode"]?.intValue == 0)
    }

    /// A client pipelines hundreds of requests and a verify with its PIN, and never reads: on the old code the
    /// final reply blocked with the memory budget and the user lock held, and everyone waited. Where exactly the
    /// daemon's writes block depends on the socket buffer, so the attack runs at many pipeline lengths: at each,
    /// another user's verify completes, nothing stays held past the send timeout, and at least one attack got
    /// its verify counted (the attempt stays counted, exactly as when a client disconnects after its PIN).
    @Test func aClientThatStopsReadingHoldsNothing() throws {
        let test = try TestDaemon(config: "daemon-wait-timeout = 5\ndaemon-rate-limit = 100000\nretries-max = 100\n") {
            options in
            options.sendTimeoutMilliseconds = 300
        }
        defer { test.stop() }
        try enrol(test, "erin")
        try enrol(test, "frank")
        var longestStall = 0.0
        for pings in stride(from: 100, through: 400, by: 15) {
            let attacker = try RawClient(test)
            var pipeline = ""
            for _ in 0..<pings { pipeline += #"{"v":1,"type":"request","op":"ping"}"# + "\n" }
            pipeline += #"{"v":1,"type":"request","op":"verify","user":"erin","method":"pin"}"# + "\n"
            pipeline += #"{"v":1,"type":"secret","prompt":"pin","value":"000000"}"# + "\n"
            let bytes = Array(pipeline.utf8)
            let fd = attacker.channel.fd
            let writer = Thread {
                // Blocks once the socket buffers are full: the daemon's replies go unread.
                var offset = 0
                while offset < bytes.count {
                    let written = bytes.withUnsafeBytes {
                        send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
                    }
                    if written <= 0 { return }
                    offset += written
                }
            }
            writer.start()
            Thread.sleep(forTimeInterval: 0.1)
            let start = Date()
            let report = try test.client(for: "frank").verify(ScriptedInteraction(["482916"]))
            #expect(report.exitCode == .success)
            longestStall = max(longestStall, elapsed(since: start))
            let deadline = Date(timeIntervalSinceNow: 10)
            while Date() < deadline && (test.daemon.userLocks.isLocked("erin") || test.daemon.budget.usage.usedKiB > 0)
            {
                Thread.sleep(forTimeInterval: 0.02)
            }
            #expect(!test.daemon.userLocks.isLocked("erin"))
            #expect(test.daemon.budget.usage.usedKiB == 0)
            attacker.channel.close()
        }
        #expect(longestStall < 3)
        #expect(try test.client(for: "erin").perform(TokenpinProtocol.Operation.Status()).remaining ?? 100 < 100)
    }

    /// With all key-derivation memory held elsewhere, a verify answers `busy` within the wait bound and its
    /// attempt is not counted (memory is taken before the counter is touched).
    @Test func busyBudgetAnswersBusyWithNothingCounted() throws {
        let test = try TestDaemon(config: "daemon-wait-timeout = 1\ndaemon-kdf-memory = 16M\n")
        defer { test.stop() }
        try enrol(test, "gina")
        let budget = test.daemon.budget
        #expect(budget.acquire(16 * 1024, waitingAtMost: 1))
        defer { budget.release(16 * 1024) }
        let start = Date()
        #expect(throws: ServiceError.busy("no key-derivation memory came free within 1 s")) {
            _ = try test.client(for: "gina").verify(ScriptedInteraction(["000000"]))
        }
        #expect(elapsed(since: start) < 5)
        #expect(try test.client(for: "gina").perform(TokenpinProtocol.Operation.Status()).remaining == 5)
    }

    /// SIGTERM's drain ends with an operation parked at a prompt: the prompt is abandoned, nothing is held.
    @Test func drainAbandonsPrompts() throws {
        let test = try TestDaemon()
        try enrol(test, "hank")
        let waiting = try RawClient(test)
        try waiting.request("verify", user: "hank")
        _ = waiting.until("prompt")
        let start = Date()
        test.daemon.beginShutdown()
        #expect(test.daemon.waitForOperations(seconds: 5))
        #expect(elapsed(since: start) < 3)
        #expect(!test.daemon.userLocks.isLocked("hank"))
        test.stop()
    }
}

@Suite struct BoundedWaitTests {
    @Test func userLockWaitEnds() {
        let locks = UserLocks()
        #expect(locks.lock("alice", waitingAtMost: 0.1))
        let start = Date()
        #expect(!locks.lock("alice", waitingAtMost: 0.2))
        #expect(elapsed(since: start) >= 0.15)
        #expect(locks.lock("bob", waitingAtMost: 0.1))
        locks.unlock("alice")
        #expect(locks.lock("alice", waitingAtMost: 0.1))
    }

    /// A waiter that gives up leaves the queue: the ones behind it are served.
    @Test func budgetWaiterThatGivesUpLeavesTheQueue() {
        let budget = MemoryBudget(capacityKiB: 100)
        #expect(budget.acquire(100, waitingAtMost: 1))
        let gaveUp = Atomic<Bool>(false)
        let served = Atomic<Bool>(false)
        let firstDone = DispatchSemaphore(value: 0)
        let first = Thread {
            gaveUp.store(!budget.acquire(50, waitingAtMost: 0.2), ordering: .releasing)
            firstDone.signal()
        }
        first.start()
        while budget.usage.waiting < 1 { usleep(1000) }
        let second = Thread {
            let granted = budget.acquire(50, waitingAtMost: 5)
            served.store(granted, ordering: .releasing)
            if granted { budget.release(50) }
        }
        second.start()
        // The first waiter's 0.2 s run out while the budget is still full: it gave up, and the second waits on.
        #expect(firstDone.wait(timeout: .now() + 10) == .success)
        let timedOut = gaveUp.load(ordering: .acquiring)
        #expect(timedOut)
        budget.release(100)
        let deadline = Date(timeIntervalSinceNow: 5)
        while !served.load(ordering: .acquiring) && Date() < deadline { usleep(1000) }
        let granted = served.load(ordering: .acquiring)
        #expect(granted)
        #expect(budget.usage.usedKiB == 0)
        #expect(budget.usage.waiting == 0)
    }
}
