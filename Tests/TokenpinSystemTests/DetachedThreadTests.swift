import Synchronization
import Testing
import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct DetachedThreadTests {
    /// What the body saw of the thread it ran on.
    struct Observed: Sendable {
        var threadID: pid_t
        var name: String
        var stackSize: Int
        var detached: Bool

        /// The calling thread as the kernel and pthreads describe it.
        static func current() -> Observed {
            // On a detached thread pthread_detach reports EINVAL (glibc checks); a joinable one it would detach.
            let detached = pthread_detach(pthread_self()) == EINVAL
            return Observed(
                threadID: currentThreadID(), name: currentThreadName(), stackSize: currentStackMapping(),
                detached: detached)
        }
    }

    /// The calling thread's ID: `/proc/thread-self` links to `PID/task/TID` (Glibc's module hides `gettid`).
    static func currentThreadID() -> pid_t {
        var target = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &target, target.count - 1)
        guard count > 0 else { return -1 }
        let link = String(decoding: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return pid_t(link.split(separator: "/").last ?? "") ?? -1
    }

    static func currentThreadName() -> String {
        guard let comm = try? FileDescriptor.openForReading("/proc/thread-self/comm"),
            let bytes = try? comm.readAll(maximumCount: 64)
        else { return "?" }
        return String(decoding: bytes, as: UTF8.self).trimmingSuffix("\n")
    }

    /// The size of the mapping that holds the calling thread's stack, from `/proc/self/maps`.
    static func currentStackMapping() -> Int {
        var local = 0
        let here = withUnsafeMutablePointer(to: &local) { UInt(bitPattern: $0) }
        guard let maps = try? FileDescriptor.openForReading("/proc/self/maps"),
            let bytes = try? maps.readAll(maximumCount: 1 << 24)
        else { return -1 }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let range = line.prefix { $0 != " " }.split(separator: "-")
            guard range.count == 2, let low = UInt(range[0], radix: 16), let high = UInt(range[1], radix: 16),
                low <= here, here < high
            else { continue }
            return Int(high - low)
        }
        return -1
    }

    /// Starts a thread and waits for what its body observed; the ID is the starting thread's.
    static func observe(name: String?, stackSize: Int) async throws -> (starter: pid_t, observed: Observed) {
        var starter: pid_t = 0
        let observed = try await withCheckedThrowingContinuation { (done: CheckedContinuation<Observed, any Error>) in
            starter = currentThreadID()
            do {
                try DetachedThread.start(name: name, stackSize: stackSize) { done.resume(returning: .current()) }
            } catch {
                done.resume(throwing: error)
            }
        }
        return (starter, observed)
    }

    @Test func theBodyRunsOnAnotherDetachedThreadNamedAsAsked() async throws {
        let (starter, observed) = try await Self.observe(name: "tp-watch", stackSize: 1 << 20)
        #expect(observed.threadID != starter)
        #expect(observed.threadID != getpid())
        #expect(observed.name == "tp-watch")
        #expect(observed.detached)
        #expect(observed.stackSize == 1 << 20)
    }

    @Test func withoutANameTheThreadKeepsTheInheritedOne() async throws {
        let inherited = Self.currentThreadName()
        let (_, observed) = try await Self.observe(name: nil, stackSize: 1 << 20)
        #expect(observed.name == inherited)
        #expect(observed.stackSize == 1 << 20)
    }

    @Test func aNameOfFifteenBytesIsKeptWhole() async throws {
        let (_, observed) = try await Self.observe(name: "fifteen-bytes-x", stackSize: 1 << 20)
        #expect(observed.name == "fifteen-bytes-x")
    }

    @Test func failuresAreTheErrnoAndTheBodyNeverRuns() {
        let ran = Flag()
        #expect(throws: Errno(rawValue: ERANGE)) {
            try DetachedThread.start(name: "sixteen-bytes-xx", stackSize: 1 << 20) { ran.set() }
        }
        #expect(throws: Errno.invalidArgument) {
            try DetachedThread.start(stackSize: Int(PTHREAD_STACK_MIN) - 1) { ran.set() }
        }
        // 64 TiB: more than the address space lets one mapping have, so pthread_create itself fails.
        #expect(throws: Errno.wouldBlock) {
            try DetachedThread.start(stackSize: 1 << 46) { ran.set() }
        }
        #expect(!ran.isSet)
    }

    @Test func theBodyIsReleasedWhenNoThreadStarts() {
        weak var weakCanary: Canary?
        do {
            let canary = Canary()
            weakCanary = canary
            _ = try? DetachedThread.start(stackSize: 1 << 46) { canary.touch() }
        }
        #expect(weakCanary == nil)
    }
}

/// A flag set from any thread.
private final class Flag: Sendable {
    private let value = Atomic(false)

    func set() { value.store(true, ordering: .relaxed) }

    var isSet: Bool { value.load(ordering: .relaxed) }
}

/// Something a body holds, to see that it is let go.
private final class Canary: Sendable {
    func touch() {}
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
