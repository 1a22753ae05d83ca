import Dispatch
import Synchronization
internal import TokenpinAPDU

/// Puts a deadline on the blocking pcsc-lite calls of one connection: each runs on the connection's own thread
/// while the caller waits for it, at most until the deadline.
///
/// pcsc-lite has no deadline of its own on `SCardConnect`, `SCardBeginTransaction`, `SCardTransmit` and the rest:
/// its client waits on the socket to pcscd for as long as pcscd waits for the reader driver, and a driver whose
/// card went quiet mid-command may wait forever (vpcd 3.3 does, and every client of that reader with it). When
/// the deadline passes, the watchdog calls `SCardCancel` on the connection's context (which ends a waiting
/// `SCardGetStatusChange`; pcsc-lite cancels nothing else), gives the connection up — every later call throws at
/// once — and throws a `.timeout` `CardTransportError`. The call itself cannot be taken back: its thread goes on
/// waiting, and once pcscd answers it runs what was queued behind it: the watchdog then owns the connection's
/// handles, disconnects the card with a reset (a PIN the late answer verified does not outlive it) and releases the
/// context. While a reader has such a call outstanding, opening it again fails at once (`isStillWaiting`), so a
/// wedged reader costs one thread and one deadline, not one per attempt.
final class PCSCWatchdog: Sendable {
    /// The reader's name; nil for calls to pcscd itself (listing readers).
    let reader: String?
    private let queue: DispatchQueue
    private let state = Mutex(State())

    private struct State {
        /// The context to cancel when a call overruns, once it exists; released by the watchdog after an overrun.
        var context: Int?
        /// The card handle, while connected; disconnected by the watchdog after an overrun.
        var card: Int?
        /// The deadline of the call that overran; nil while none did.
        var overrun: (call: String, timeout: Duration)?
    }

    /// The readers with a call that overran its deadline and still waits for pcscd, and how many.
    private static let waiting = Mutex<[String: Int]>([:])

    init(reader: String?) {
        self.reader = reader
        queue = DispatchQueue(label: "tokenpin.pcsc." + (reader ?? "pcscd"))
    }

    /// Whether a call to `reader` overran its deadline and has not returned yet.
    static func isStillWaiting(_ reader: String) -> Bool {
        waiting.withLock { ($0[reader] ?? 0) > 0 }
    }

    /// The context `SCardCancel` is called on when a call overruns (and released after it); nil once released.
    func watch(context: Int?) { state.withLock { $0.context = context } }

    /// The context being watched, if any.
    var watchedContext: Int? { state.withLock { $0.context } }

    /// The card handle to disconnect after an overrun; nil once the connection disconnected it.
    func watch(card: Int?) { state.withLock { $0.card = card } }

    /// Whether a call overran and the connection was given up.
    var hasGivenUp: Bool { state.withLock { $0.overrun != nil } }

    /// Runs `body` (one pcsc-lite call, named `call` in errors) and waits for it at most `timeout`.
    ///
    /// - Throws: the `PCSCError` `body` throws, in the transport's terms; `.timeout` (`.serviceUnavailable` for
    ///   pcscd itself) when the deadline passed (then, and after any earlier overrun, nothing more is sent).
    func run<R>(_ call: String, timeout: Duration, _ body: @escaping () throws(PCSCError) -> R)
        throws(CardTransportError) -> R
    {
        if let overrun = state.withLock({ $0.overrun }) {
            throw CardTransportError(
                CardTimeoutError(reader: reader, timeout: overrun.timeout, call: overrun.call, stillWaiting: true))
        }
        let outcome = Outcome<R>(reader: reader)
        // The caller waits for `body` below, or gives the connection up and never touches what `body` uses again:
        // one thread at a time uses what the closure captures.
        let work = Unchecked(body)
        queue.async {
            do throws(PCSCError) {
                outcome.finish(.success(try work.value()))
            } catch {
                outcome.finish(.failure(error))
            }
        }
        if outcome.wait(timeout), let result = outcome.result { return try Self.value(of: result) }
        guard outcome.giveUp() else {
            // It finished just as the deadline passed.
            return try Self.value(of: outcome.result!)
        }
        let context = state.withLock { state in
            state.overrun = (call, timeout)
            return state.context
        }
        if let context { try? PCSCLibrary.cancel(context) }
        // Queued behind the call that overran: runs once pcscd answers it. The handles are read then, so a
        // context or card the late call itself made is released too.
        queue.async { [self] in
            let handles = state.withLock { state in
                defer { (state.card, state.context) = (nil, nil) }
                return (state.card, state.context)
            }
            if let card = handles.0 { try? PCSCLibrary.disconnect(card, disposition: CardDisposition.reset.rawValue) }
            if let context = handles.1 { PCSCLibrary.releaseContext(context) }
        }
        throw CardTransportError(CardTimeoutError(reader: reader, timeout: timeout, call: call))
    }

    private static func value<R>(of result: Result<R, PCSCError>) throws(CardTransportError) -> R {
        switch result {
        case .success(let value): value
        case .failure(let error): throw CardTransportError(error)
        }
    }

    /// One call's result, handed from the connection's thread to the caller.
    private final class Outcome<R>: @unchecked Sendable {
        // `result` is written once, by `finish`, before `done` is signalled, and read only after the wait or under
        // `phase`'s lock: the semaphore and the lock order the accesses.
        nonisolated(unsafe) var result: Result<R, PCSCError>?
        private let done = DispatchSemaphore(value: 0)
        private let phase = Mutex(Phase.running)
        private let reader: String?

        enum Phase { case running, finished, abandoned }

        init(reader: String?) { self.reader = reader }

        func finish(_ value: Result<R, PCSCError>) {
            let abandoned = phase.withLock { phase in
                result = value
                defer { phase = .finished }
                return phase == .abandoned
            }
            if abandoned, let reader {
                PCSCWatchdog.waiting.withLock { waiting in
                    waiting[reader] = (waiting[reader] ?? 1) - 1
                    if waiting[reader] == 0 { waiting[reader] = nil }
                }
            }
            done.signal()
        }

        /// Waits at most `timeout`; true when the call finished.
        func wait(_ timeout: Duration) -> Bool {
            let (seconds, attoseconds) = timeout.components
            let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
            return done.wait(timeout: .now() + .nanoseconds(max(0, nanoseconds))) == .success
        }

        /// Marks a call still running as abandoned (its reader counted as waiting); false when it had finished.
        func giveUp() -> Bool {
            phase.withLock { phase in
                guard phase == .running else { return false }
                phase = .abandoned
                if let reader { PCSCWatchdog.waiting.withLock { $0[reader, default: 0] += 1 } }
                return true
            }
        }
    }
}

/// A value moved to another thread while its owner waits for it (see `PCSCWatchdog.run`).
private struct Unchecked<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
