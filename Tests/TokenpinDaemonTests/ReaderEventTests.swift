import Foundation
import Synchronization
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinDaemon
import TokenpinProtocol
import TokenpinService
import TokenpinTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Reader events as the test scripts them, a real alternative to pcscd: `start()` fails while outages remain,
/// then hands out a stream that delivers what the test pushes, or fails when the test says so.
final class ScriptedReaderEvents: ReaderEventSource {
    enum Step: Sendable {
        case events([ReaderEvent])
        /// The stream fails, as a monitor does when pcscd stops.
        case fail
    }

    struct State {
        var outages: Int
        var starts = 0
        var present: [ReaderPresence]
        var steps: [Step] = []
    }

    let state: Mutex<State>

    init(outages: Int = 0, present: [ReaderPresence] = []) {
        state = Mutex(State(outages: outages, present: present))
    }

    /// Attempts to start so far, failed ones included.
    var starts: Int { state.withLock { $0.starts } }

    func push(_ step: Step) { state.withLock { $0.steps.append(step) } }

    func start() throws(ReaderEventError) -> any ReaderEventStream {
        let present = try state.withLock { state throws(ReaderEventError) -> [ReaderPresence] in
            state.starts += 1
            if state.outages > 0 {
                state.outages -= 1
                throw ReaderEventError("the reader service is not running")
            }
            return state.present
        }
        return Stream(source: self, readers: present)
    }

    final class Stream: ReaderEventStream {
        let source: ScriptedReaderEvents
        let readers: [ReaderPresence]

        init(source: ScriptedReaderEvents, readers: [ReaderPresence]) {
            self.source = source
            self.readers = readers
        }

        func next(timeout: Duration) throws(ReaderEventError) -> [ReaderEvent] {
            let step = source.state.withLock { $0.steps.isEmpty ? nil : $0.steps.removeFirst() }
            switch step {
            case .events(let events): return events
            case .fail: throw ReaderEventError("the reader service stopped")
            case nil:
                usleep(5_000)  // nothing yet: a short wait stands for the timeout
                return []
            }
        }
    }
}

/// Collects the events a `watch` client receives, on a thread of its own.
final class Watcher: Sendable {
    let events = Mutex<[WatchedEvent]>([])

    init(_ test: TestDaemon) {
        let client = test.client
        let subscribed = DispatchSemaphore(value: 0)
        Thread { [self] in
            try? client.watch { event in
                events.withLock { $0.append(event) }
                return true
            } onSubscribed: { _ in
                subscribed.signal()
            }
        }.start()
        #expect(subscribed.wait(timeout: .now() + 30) == .success, "the daemon confirmed the subscription")
    }

    /// The events received so far, as `name reader-or-user`.
    var seen: [String] {
        events.withLock { events in
            events.map { event in
                let object = JSONValue.object(event.fields)
                return event.name + " " + (object["reader"]?.stringValue ?? event.user ?? "")
            }
        }
    }
}

/// Waits up to ten seconds for `condition` (the machine may be busy; a pass takes milliseconds).
func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<2000 {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}

@Suite(.serialized) struct ReaderEventTests {
    /// A `loginctl` that names one session and records what it was asked to lock.
    static func fakeLoginctl(in directory: String) throws -> (program: String, log: String) {
        let program = directory + "/loginctl"
        let log = directory + "/loginctl.log"
        try """
        #!/bin/sh
        case "$1" in
            show-user) echo 7 ;;
            lock-session) echo "$@" >> '\(log)' ;;
            *) exit 1 ;;
        esac
        """.write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        return (program, log)
    }

    @Test("reader events reach watch subscribers, and a bound card leaving locks its user's sessions")
    func eventsReachWatchersAndCardRemoval() throws {
        let source = ScriptedReaderEvents(present: [ReaderPresence(name: "reader one", cardPresent: true)])
        let scratch = temporaryDirectory("reader-events")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let loginctl = try Self.fakeLoginctl(in: scratch)
        let test = try TestDaemon(config: "on-card-removal = lock\nlock-grace = 0\n") { options in
            options.readerEvents = source
            options.loginctl = loginctl.program
        }
        defer { test.stop() }
        let watcher = Watcher(test)
        #expect(eventually { source.starts == 1 })
        #expect(eventually { test.logs.lines.contains { $0.contains("watching readers") } })

        // The user verified with the card in "reader one"; a plain card swap elsewhere locks nobody.
        let user = Peer.userName(uid: getuid())
        test.daemon.cardRemoval.tokenVerified(user: user, serial: "000500001234", reader: "reader one")
        source.push(
            .events([ReaderEvent(.readerAdded, reader: "reader two"), ReaderEvent(.cardInserted, reader: "reader two")])
        )
        source.push(.events([ReaderEvent(.cardRemoved, reader: "reader two")]))
        source.push(.events([ReaderEvent(.cardRemoved, reader: "reader one")]))
        #expect(eventually { watcher.seen.count >= 5 }, "\(watcher.seen)")
        #expect(
            watcher.seen == [
                "readerAdded reader two", "cardInserted reader two", "cardRemoved reader two",
                "cardRemoved reader one", "sessionsLocked \(user)",
            ])
        let locked = try String(contentsOfFile: loginctl.log, encoding: .utf8)
        #expect(locked == "lock-session 7\n")
    }

    @Test("a reader service that is down is retried, its outage logged once, and a failed stream restarted")
    func outageIsRetried() throws {
        let source = ScriptedReaderEvents(outages: 3)
        let test = try TestDaemon { options in
            options.readerEvents = source
            options.readerRetrySeconds = 0.01
        }
        defer { test.stop() }
        let watcher = Watcher(test)
        #expect(eventually { source.starts == 4 }, "three failed starts, then one that works")
        #expect(eventually { test.logs.lines.contains { $0.contains("watching readers") } })
        #expect(test.logs.lines.filter { $0.contains("reader service not reachable") }.count == 1)

        source.push(.events([ReaderEvent(.cardInserted, reader: "r")]))
        source.push(.fail)
        source.push(.events([ReaderEvent(.cardRemoved, reader: "r")]))
        #expect(eventually { watcher.seen.count >= 2 }, "\(watcher.seen)")
        #expect(watcher.seen == ["cardInserted r", "cardRemoved r"])
        #expect(source.starts == 5, "the failed stream was replaced by a new one")
        #expect(test.logs.lines.contains { $0.contains("reader monitoring stopped; retrying") })
    }
}
