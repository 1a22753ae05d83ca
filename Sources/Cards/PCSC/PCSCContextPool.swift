import Synchronization

/// PC/SC contexts kept established for the next user in this process, so that opening the card again (tokenpind, at
/// every request; a verification that lists the readers, then connects) does not pay `SCardEstablishContext` and
/// `SCardReleaseContext` each time: a connection to pcscd's socket, two round trips and a close.
///
/// A context is held by one user at a time: taken (`lease`), used by one connection or one reader listing, and given
/// back only when that user ended cleanly: every call answered within its deadline (an overrun leaves the context to
/// the watchdog, which releases it) and its card handle disconnected (a context whose disconnect failed is released,
/// so pcscd drops the handle with it). A context holds no card state of its own (no handle, no transaction, no
/// verified PIN: those belong to card handles), so the next user inherits nothing but the socket. At most `capacity`
/// wait; more are released.
///
/// pcscd forgets every context when it restarts, and pcsc-lite's client only finds out at the next call. So the
/// first call on a context that was waiting in the pool is run through `Lease.firstCall`: when it fails the way a
/// dead context fails (`SCARD_E_NO_SERVICE`, `SCARD_E_SERVICE_STOPPED`, `SCARD_F_COMM_ERROR`, `SCARD_E_INVALID_HANDLE`),
/// every waiting context is released and the call is made once more on a new context.
final class PCSCContextPool: Sendable {
    /// The process's pool, over pcsc-lite.
    static let shared = PCSCContextPool(
        establish: { () throws(PCSCError) in try PCSCLibrary.establishContext() },
        release: { PCSCLibrary.releaseContext($0) })

    /// How many established contexts may wait; tokenpind runs one operation per user and rarely two cards at once.
    let capacity: Int

    private let establishContext: @Sendable () throws(PCSCError) -> PCSCLibrary.Context
    private let releaseContext: @Sendable (PCSCLibrary.Context) -> Void
    private let state = Mutex(State())

    private struct State {
        var waiting: [PCSCLibrary.Context] = []
        var established = 0
        var reused = 0
    }

    /// A pool that makes contexts with `establish` and ends them with `release` (tests give their own).
    init(
        capacity: Int = 2, establish: @escaping @Sendable () throws(PCSCError) -> PCSCLibrary.Context,
        release: @escaping @Sendable (PCSCLibrary.Context) -> Void
    ) {
        self.capacity = capacity
        establishContext = establish
        releaseContext = release
    }

    /// A context for one user: a waiting one, else a new one. Its user ends it once (`end`), which gives the context
    /// back or releases it; after that, or after a dead context could not be replaced, it holds none.
    struct Lease {
        /// The context; nil once the lease ended, or when a dead one was released and no new one could be made.
        private(set) var context: PCSCLibrary.Context?
        /// Whether it waited in the pool (and so may be dead, if pcscd restarted since).
        private(set) var reused: Bool
        let pool: PCSCContextPool

        /// Runs `call` on the context; when it waited in the pool and `call` fails as on a dead context, releases
        /// it and the pool's other waiting contexts, establishes a new one and runs `call` again. Throws
        /// `.invalidHandle` on a lease that holds no context.
        mutating func firstCall<R>(_ call: (PCSCLibrary.Context) throws(PCSCError) -> R) throws(PCSCError) -> R {
            guard let current = context else { throw .invalidHandle }
            do {
                return try call(current)
            } catch  where reused && PCSCContextPool.meansDeadContext(error) {
                context = nil
                reused = false
                pool.releaseContext(current)
                pool.releaseWaiting()
                let fresh = try pool.establish()
                context = fresh
                return try call(fresh)
            }
        }

        /// Ends the lease: the context goes back to the pool when `reusable` (its user overran no deadline and left
        /// no card handle on it) and `error` does not say it is dead; else it is released. Nothing after the first.
        mutating func end(reusable: Bool, after error: PCSCError? = nil) {
            guard let current = context else { return }
            context = nil
            if reusable { pool.end(current, after: error) } else { pool.releaseContext(current) }
        }
    }

    /// A waiting context, or a new one. Throws what `SCardEstablishContext` throws (`.noService` when pcscd is not
    /// running).
    func lease() throws(PCSCError) -> Lease {
        let waiting = state.withLock { state -> PCSCLibrary.Context? in
            guard let context = state.waiting.popLast() else { return nil }
            state.reused += 1
            return context
        }
        if let waiting { return Lease(context: waiting, reused: true, pool: self) }
        return Lease(context: try establish(), reused: false, pool: self)
    }

    /// Gives back a context its user finished with cleanly (no card handle left on it); released when the pool is
    /// full.
    func giveBack(_ context: PCSCLibrary.Context) {
        let kept = state.withLock { state in
            guard state.waiting.count < capacity else { return false }
            state.waiting.append(context)
            return true
        }
        if !kept { releaseContext(context) }
    }

    /// Ends the use of a context whose user left no card handle on it: back to the pool, unless `error` says the
    /// context is dead (`Lease.end`).
    private func end(_ context: PCSCLibrary.Context, after error: PCSCError?) {
        if let error, Self.meansDeadContext(error) {
            releaseContext(context)
        } else {
            giveBack(context)
        }
    }

    /// Releases a context that must not be used again (its user overran a deadline, or left a card handle on it).
    func release(_ context: PCSCLibrary.Context) { releaseContext(context) }

    /// Releases every waiting context.
    func releaseWaiting() {
        let contexts = state.withLock { state in
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for context in contexts { releaseContext(context) }
    }

    /// How many contexts this pool established, how many uses found one waiting, and how many wait now.
    var statistics: (established: Int, reused: Int, waiting: Int) {
        state.withLock { ($0.established, $0.reused, $0.waiting.count) }
    }

    /// Whether a call failed the way calls on a context pcscd no longer knows fail.
    static func meansDeadContext(_ error: PCSCError) -> Bool {
        error == .noService || error == .serviceStopped || error == .communicationError || error == .invalidHandle
    }

    private func establish() throws(PCSCError) -> PCSCLibrary.Context {
        let context = try establishContext()
        state.withLock { $0.established += 1 }
        return context
    }
}
