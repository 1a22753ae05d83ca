package import TokenpinAPDU

/// A context with pcscd, the PC/SC resource manager: lists readers and their cards.
///
/// The owner of one `SCARDCONTEXT`, released when the value goes away. Every call blocks until pcscd
/// answers; run them on a thread of your own (or a dispatch queue), never on the Swift concurrency
/// cooperative pool. Card connections (`PCSCCardConnection`) hold a context of their own, so they do not
/// depend on this one staying alive.
package struct PCSCContext: ~Copyable, Sendable {
    let handle: Int

    /// Opens a context with pcscd.
    ///
    /// Throws `PCSCError.noService` (with a hint on how to start it) when pcscd is not running.
    /// The corresponding C function is `SCardEstablishContext`.
    package init() throws(PCSCError) {
        handle = try PCSCLibrary.establishContext()
    }

    deinit {
        PCSCLibrary.releaseContext(handle)
    }

    /// Whether pcscd still knows this context (it forgets it when it restarts).
    ///
    /// The corresponding C function is `SCardIsValidContext`.
    package var isValid: Bool { PCSCLibrary.isValidContext(handle) }

    /// A token that cancels a blocking wait on this context from another thread.
    package var canceller: PCSCCanceller { PCSCCanceller(context: handle) }

    /// Every reader with the state of its card, read by a context of its own within `timeout`.
    ///
    /// Throws pcsc-lite's failure as a `CardTransportError` (`.serviceUnavailable` when pcscd is not running or did
    /// not answer in time; `SCardCancel` then ends a `SCardGetStatusChange` still waiting). The corresponding C
    /// functions are `SCardEstablishContext`, `SCardListReaders` and `SCardGetStatusChange`.
    package static func readerStatuses(within timeout: Duration) throws(CardTransportError) -> [ReaderStatus] {
        let watchdog = PCSCWatchdog(reader: nil)
        return try watchdog.run("SCardGetStatusChange", timeout: timeout) { () throws(PCSCError) in
            // A context of the process's pool (`PCSCContextPool`), back in it afterwards unless the call overran
            // (then pcscd may be wedged, and the context is released) or failed as on a dead context.
            var lease = try PCSCContextPool.shared.lease()
            var statuses: [ReaderStatus] = []
            var failure: PCSCError?
            do throws(PCSCError) {
                statuses = try lease.firstCall { context throws(PCSCError) in
                    watchdog.watch(context: context)
                    return try readerStatuses(context)
                }
            } catch {
                failure = error
            }
            watchdog.watch(context: nil)
            lease.end(reusable: !watchdog.hasGivenUp, after: failure)
            if let failure { throw failure }
            return statuses
        }
    }

    /// The names of the readers pcscd knows; empty when there is none.
    ///
    /// The corresponding C function is `SCardListReaders`.
    package func readers() throws(PCSCError) -> [String] {
        try Self.readers(handle)
    }

    /// Every reader with the state of its card, read without waiting.
    ///
    /// The corresponding C function is `SCardGetStatusChange` with a zero timeout.
    package func readerStatuses() throws(PCSCError) -> [ReaderStatus] {
        try Self.readerStatuses(handle)
    }

    /// The names of the readers pcscd knows, asked on `context`; empty when there is none.
    static func readers(_ context: PCSCLibrary.Context) throws(PCSCError) -> [String] {
        do {
            return ReaderList.parse(try PCSCLibrary.listReaders(context))
        } catch  where error == .noReadersAvailable {
            return []
        }
    }

    /// Every reader with the state of its card, read on `context` without waiting.
    static func readerStatuses(_ context: PCSCLibrary.Context) throws(PCSCError) -> [ReaderStatus] {
        let names = try readers(context)
        guard !names.isEmpty else { return [] }
        var entries = names.map { PCSCLibrary.ReaderStateEntry(reader: $0, currentState: 0) }
        _ = try PCSCLibrary.getStatusChange(context, timeout: 0, entries: &entries)
        return entries.map { ReaderStatus(name: $0.reader, state: ReaderState(rawValue: $0.eventState), atr: $0.atr) }
    }

    /// Raw reader entries with pcsc-lite's full event state (counter bits included), for `ReaderMonitor`.
    func rawStates(of names: [String]) throws(PCSCError) -> [PCSCLibrary.ReaderStateEntry] {
        guard !names.isEmpty else { return [] }
        var entries = names.map { PCSCLibrary.ReaderStateEntry(reader: $0, currentState: 0) }
        _ = try PCSCLibrary.getStatusChange(handle, timeout: 0, entries: &entries)
        return entries
    }
}
