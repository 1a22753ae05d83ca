package import TokenpinAPDU

/// A connection to the card in one PC/SC reader: the `CardConnection` tokenpin uses for real tokens.
///
/// The owner of an `SCARDHANDLE` and of the `SCARDCONTEXT` it lives in (a class, since `CardConnection` is
/// `AnyObject`; `deinit` disconnects the card and gives the context back to `PCSCContextPool` for the next
/// connection, or releases it when the handle could not be dropped or a call overran). Commands are sent with
/// `SCardTransmit`; GET RESPONSE, `6Cxx` and chaining come from `CardConnection.send(_:)`. The length capabilities start from the card capabilities in
/// the ATR's historical bytes and can be refined by the caller (an OpenPGP session reads `7F66`).
///
/// **Security state.** A successful VERIFY, CHANGE REFERENCE DATA or RESET RETRY COUNTER (ISO/IEC 7816-4
/// instructions `20`, `24`, `2C`) leaves a PIN verified on the card. When the surrounding transaction ends
/// and when it disconnects, the connection resets the card, so no other process inherits the verified state.
/// With `leavesCardWhenCleared` it first asks the card to drop the PINs it verified (VERIFY with P1 = `FF`,
/// see `VerifiedState`) and leaves the card as it is when every answer is `9000`, resetting it otherwise (a
/// card without the feature, or after CHANGE REFERENCE DATA or RESET RETRY COUNTER).
///
/// Resetting is the default because gpg 2.2's scdaemon (Debian 12) recovers from a reset but not from a
/// leave: after a reset its next operation fails once and the one after works, while after VERIFY `FF` and
/// a leave it goes on believing its PIN verified and every later operation fails (`6982`, "Bad PIN") until
/// scdaemon restarts (measured: Tests/EndToEnd/token-algorithms.sh, docs/troubleshooting.md).
///
/// **Deadlines.** Every pcsc-lite call runs on the connection's own thread and is waited for at most until its
/// deadline (`timeouts`: `card-timeout`, 10 s, per command; longer for key generation). A reader that does not
/// answer in time makes the call throw a `.timeout` `CardTransportError`; the connection is then given up,
/// `SCardCancel` is called on its context, and the card is disconnected with a reset once pcscd answers the call
/// that overran (`PCSCWatchdog`). While that call is outstanding, a new connection to the reader fails at once.
///
/// **Threads.** Every call blocks until pcscd (and the card) answer or the deadline passes. Use a connection from
/// one thread at a time and keep it off the Swift concurrency cooperative pool (a dedicated thread or dispatch
/// queue).
package final class PCSCCardConnection: CardConnection {
    /// The reader the card is in.
    package let readerName: String
    /// The card's answer to reset, as pcscd read it at connect (or at the last reconnect).
    package private(set) var atr: [UInt8]
    /// The protocol in use, `.t0` or `.t1`.
    package private(set) var activeProtocol: CardProtocols
    /// How `send(_:)` encodes long commands; set from the ATR, refined by the caller.
    package var lengthCapabilities: LengthCapabilities
    /// Whether a PIN may be verified on the card: ending the transaction or disconnecting then clears it.
    ///
    /// Set by the connection when it sees a successful VERIFY, CHANGE REFERENCE DATA or RESET RETRY
    /// COUNTER; a caller may set it too (which forces a reset). Cleared once the state was dropped.
    package var holdsSecurityState: Bool {
        get { !verified.isEmpty }
        set {
            if newValue { verified.requireReset() } else { verified.forget() }
        }
    }
    /// Drop a verified PIN with VERIFY P1 = `FF` and leave the card, where the card answers `9000`, instead of
    /// resetting it (off by default: see the type's documentation for why).
    package var leavesCardWhenCleared = false
    /// How the card was released the last time a verified PIN had to be dropped: `.leave` after the card
    /// cleared it on request, `.reset` otherwise; `nil` before that happened.
    package private(set) var lastSecurityRelease: CardDisposition?

    /// How many times this connection reset the card to drop a verified PIN (`CardConnection.resets`).
    package private(set) var resets = 0

    /// The PINs verified on the card since it was last cleared.
    var verified = VerifiedState()
    /// The reader's secure PIN entry once asked for (PCSCCardConnection+Pinpad.swift); `.some(nil)`: none.
    var detectedPinpad: Pinpad??

    /// How long each call may wait for the reader; key generation has its own, longer deadline.
    package var timeouts: CardTimeouts
    /// Runs each pcsc-lite call with its deadline, and owns the handles once a call overran.
    private let watchdog: PCSCWatchdog
    /// Where its context came from, and goes back to.
    private let pool: PCSCContextPool

    private let shareMode: ShareMode
    private let protocols: CardProtocols
    private let context: Int
    private(set) var card: Int
    private var isConnected = true
    private var transactionDepth = 0
    /// Whether `disconnect()` dropped the card handle (so the context holds none and may serve the next connection).
    private var handleDropped = false
    /// We reset the card at the end of a transaction; pcscd reports that reset to our own handle once.
    private var expectsOwnReset = false
    /// The receive buffer, reused; the bytes of each answer are wiped once copied out. An object of its own, so that
    /// what `SCardTransmit` runs on the connection's PC/SC thread holds the buffer and never the connection: the last
    /// reference to a connection is its user's, and its `deinit` never runs on the thread it waits for.
    private let receiveBuffer = ReceiveBuffer()

    /// Connects to the card in `reader`.
    ///
    /// Takes a context of its own (one established earlier in this process when one waits, `PCSCContextPool`), then
    /// connects in `shareMode` (shared by default, so gpg's scdaemon in shared mode and other tokenpin processes can
    /// coexist) with T=1 or T=0 and reads the ATR, the three within one command deadline of `timeouts`.
    /// Throws what pcsc-lite reports (`SCARD_E_NO_SERVICE`, `SCARD_E_UNKNOWN_READER`, `SCARD_E_NO_SMARTCARD`,
    /// `SCARD_E_SHARING_VIOLATION`, `SCARD_W_UNRESPONSIVE_CARD`, ...) as a `CardTransportError`; `.timeout` when
    /// pcscd or the reader did not answer in time, or an earlier call to the reader still waits for its answer.
    /// The corresponding C functions are `SCardEstablishContext` (when no context waits), `SCardConnect` and
    /// `SCardStatus`.
    package convenience init(
        reader: String, shareMode: ShareMode = .shared, protocols: CardProtocols = .any,
        timeouts: CardTimeouts = .standard
    ) throws(CardTransportError) {
        try self.init(reader: reader, shareMode: shareMode, protocols: protocols, timeouts: timeouts, pool: .shared)
    }

    /// Connects as above, taking its context from `pool` and giving it back there (tests give a pool of their own).
    init(
        reader: String, shareMode: ShareMode, protocols: CardProtocols, timeouts: CardTimeouts,
        pool: PCSCContextPool
    ) throws(CardTransportError) {
        if PCSCWatchdog.isStillWaiting(reader) {
            throw CardTransportError(
                CardTimeoutError(reader: reader, timeout: timeouts.command, call: "SCardConnect", stillWaiting: true))
        }
        let watchdog = PCSCWatchdog(reader: reader)
        // The context (from the pool, else new), the connection and the card's ATR in one trip to the connection's
        // thread and one deadline: what a connection costs beyond pcscd's own answers is the hops.
        let connected = try watchdog.run("SCardConnect", timeout: timeouts.command) {
            () throws(PCSCError) -> (card: Int, activeProtocol: UInt32, context: Int, atr: [UInt8]?) in
            var lease = try pool.lease()
            var used = 0
            do throws(PCSCError) {
                let connected = try lease.firstCall { context throws(PCSCError) in
                    used = context
                    watchdog.watch(context: context)
                    return try PCSCLibrary.connect(
                        context, reader: reader, shareMode: shareMode.rawValue, protocols: protocols.rawValue)
                }
                watchdog.watch(card: connected.card)
                let atr = (try? PCSCLibrary.status(connected.card))?.atr
                return (connected.card, connected.activeProtocol, used, atr)
            } catch {
                // No card handle was made. The watchdog lets go of the context first, so that after an overrun it
                // is released once, here, and back in the pool only when no call overran and it is not dead.
                watchdog.watch(context: nil)
                lease.end(reusable: !watchdog.hasGivenUp, after: error)
                throw error
            }
        }
        self.watchdog = watchdog
        self.pool = pool
        self.timeouts = timeouts
        self.context = connected.context
        self.card = connected.card
        self.readerName = reader
        self.shareMode = shareMode
        self.protocols = protocols
        self.activeProtocol = CardProtocols(rawValue: connected.activeProtocol)
        self.atr = connected.atr ?? []
        self.lengthCapabilities = ATR(connected.atr ?? [])?.lengthCapabilities ?? .shortOnly
        if watchdog.hasGivenUp { isConnected = false }
    }

    deinit {
        // After an overrun the watchdog owns the handles. Else they are released here, within the deadline
        // (resetting a card that may hold a verified PIN); a release that overruns is left to the watchdog.
        guard !watchdog.hasGivenUp else { return }
        let (card, context, connected) = (self.card, self.context, isConnected)
        let disposition = verified.isEmpty ? CardDisposition.leave : .reset
        let (watchdog, pool) = (self.watchdog, self.pool)
        let handleDropped = self.handleDropped
        try? watchdog.run("SCardDisconnect", timeout: timeouts.command) { () throws(PCSCError) in
            // The context is kept for the next connection only when no card handle is left on it.
            var reusable = handleDropped
            if connected {
                reusable = (try? PCSCLibrary.disconnect(card, disposition: disposition.rawValue)) != nil
            }
            watchdog.watch(card: nil)
            watchdog.watch(context: nil)
            if reusable && !watchdog.hasGivenUp {
                pool.giveBack(context)
            } else {
                pool.release(context)
            }
        }
    }

    /// Runs one pcsc-lite call on the connection's thread within `timeout` (default: the command deadline); after
    /// a call overran its deadline the connection is given up.
    func call<R>(_ name: String, timeout: Duration? = nil, _ body: @escaping () throws(PCSCError) -> R)
        throws(CardTransportError) -> R
    {
        do {
            return try watchdog.run(name, timeout: timeout ?? timeouts.command, body)
        } catch {
            if watchdog.hasGivenUp { isConnected = false }
            throw error
        }
    }

    /// Sends one command APDU and returns the raw answer (data and status word).
    ///
    /// No GET RESPONSE or chaining happens here; `send(_:)` does that. The receive buffer is wiped after the
    /// answer is copied out. The caller wipes the returned array when it holds a secret.
    /// Throws `.cardRemoved`, `.cardReset`, `.noCard` when the card went away, `.timeout` or `.unresponsive` when
    /// it stopped answering (pcsc-lite's code inside), `.timeout` too when the answer did not come within the
    /// command's deadline. The corresponding C function is `SCardTransmit`.
    package func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        try checkConnected()
        let count: Int
        do {
            count = try rawTransmit(command)
        } catch {
            // The reset we asked for at the end of the last transaction: renegotiate and send again.
            guard error.kind == .cardReset, expectsOwnReset else { throw error }
            try resynchronize()
            count = try rawTransmit(command)
        }
        expectsOwnReset = false
        let answer = Array(receiveBuffer.bytes[0..<count])
        receiveBuffer.bytes.withUnsafeMutableBufferPointer { buffer in
            for index in 0..<count { buffer[index] = 0 }
        }
        noteSecurityState(command: command, answer: answer)
        return answer
    }

    /// Runs `body` with the card reserved for this connection: no other process's command comes between.
    ///
    /// Use it around every sequence that must not be interleaved (SELECT, VERIFY, PSO:DECIPHER). If a PIN
    /// was verified inside, the transaction ends with a card reset, so the verified state never outlives it;
    /// the next command then renegotiates with the card by itself (the application must be selected
    /// again). Nested calls join the outer transaction. When ending the transaction fails after `body`
    /// succeeded (the card was pulled right after), `body`'s result is still returned and the reset is
    /// repeated at disconnect.
    /// Throws what `body` throws, and `transportError` of the transport's failure to begin the transaction.
    /// The corresponding C functions are `SCardBeginTransaction` and `SCardEndTransaction`.
    package func withTransaction<R: ~Copyable, E: Error>(
        transportError: (CardTransportError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R {
        do {
            try checkConnected()
        } catch {
            throw transportError(error)
        }
        if transactionDepth > 0 {
            transactionDepth += 1
            let result: R
            do {
                result = try body()
            } catch {
                transactionDepth -= 1
                throw error
            }
            transactionDepth -= 1
            return result
        }
        do {
            try begin()
        } catch {
            throw transportError(error)
        }
        transactionDepth = 1
        // No `defer` here: Swift 6.3 crashes compiling `defer` with a `~Copyable` result.
        let result: R
        do {
            result = try body()
        } catch {
            transactionDepth = 0
            endTransaction()
            throw error
        }
        transactionDepth = 0
        endTransaction()
        return result
    }

    /// `withTransaction(transportError:_:)` with the transport's error thrown as it is: for tools and tests that
    /// speak APDUs bare (`send(_:)`).
    package func withTransaction<R: ~Copyable>(_ body: () throws -> R) throws -> R {
        try withTransaction(transportError: { $0 }, body)
    }

    /// `withTransaction(transportError:_:)`, as every card connection names it.
    package func exclusive<R: ~Copyable, E: Error>(
        transportError: (CardTransportError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R {
        try withTransaction(transportError: transportError, body)
    }

    /// Begins the transaction, renegotiating first after the reset this connection asked for at the end of the last.
    private func begin() throws(CardTransportError) {
        do {
            try beginTransaction()
        } catch {
            guard error.kind == .cardReset, expectsOwnReset else { throw error }
            try resynchronize()
            try beginTransaction()
        }
    }

    /// `disconnect()`, ignoring a card that is already gone.
    package func close() {
        try? disconnect()
    }

    /// Ends the transaction, first dropping a verified PIN: by resetting the card or, with
    /// `leavesCardWhenCleared`, by VERIFY P1 = `FF` where the card does it.
    private func endTransaction() {
        guard isConnected else { return }
        let disposition = releaseDisposition()
        let card = self.card
        do {
            try call("SCardEndTransaction") { () throws(PCSCError) in
                try PCSCLibrary.endTransaction(card, disposition: disposition.rawValue)
            }
            if disposition == .reset {
                verified.forget()
                expectsOwnReset = true
                resets += 1
            }
        } catch {
            // The card is gone or the reset failed: keep the state so that disconnect resets.
            if disposition == .reset { verified.requireReset() }
        }
    }

    /// How to release the card now: `.leave` when nothing is verified or, with `leavesCardWhenCleared`, the card
    /// dropped what was (VERIFY with P1 = `FF` answered `9000` for every verified reference); `.reset` otherwise.
    private func releaseDisposition() -> CardDisposition {
        guard !verified.isEmpty else { return .leave }
        guard leavesCardWhenCleared else {
            lastSecurityRelease = .reset
            return .reset
        }
        let cleared = verified.clear { command throws(CardTransportError) -> [UInt8] in
            let count = try rawTransmit(command)
            return Array(receiveBuffer.bytes[0..<count])
        }
        let disposition: CardDisposition = cleared ? .leave : .reset
        lastSecurityRelease = disposition
        return disposition
    }

    /// Re-establishes the connection after the card was reset, leaving it as it is now.
    ///
    /// Use after `.cardReset` (another process reset the card): the card's state (selected application, verified
    /// PINs) is gone, so select the application again.
    /// The corresponding C function is `SCardReconnect`.
    package func reconnect() throws(CardTransportError) {
        try checkConnected()
        try resynchronize()
    }

    private func resynchronize() throws(CardTransportError) {
        let (card, shareMode, protocols) = (self.card, self.shareMode.rawValue, self.protocols.rawValue)
        let active = try call("SCardReconnect") { () throws(PCSCError) in
            try PCSCLibrary.reconnect(
                card, shareMode: shareMode, protocols: protocols, initialization: CardDisposition.leave.rawValue)
        }
        activeProtocol = CardProtocols(rawValue: active)
        expectsOwnReset = false
        if let status = try? call("SCardStatus", { () throws(PCSCError) in try PCSCLibrary.status(card) }) {
            atr = status.atr
        }
    }

    /// SCardBeginTransaction within the command deadline.
    private func beginTransaction() throws(CardTransportError) {
        let card = self.card
        try call("SCardBeginTransaction") { () throws(PCSCError) in try PCSCLibrary.beginTransaction(card) }
    }

    /// SCardTransmit of `command` into the receive buffer within the command's deadline; the answer's length.
    private func rawTransmit(_ command: [UInt8]) throws(CardTransportError) -> Int {
        let (card, t1) = (self.card, activeProtocol != .t0)
        let buffer = receiveBuffer
        return try call("SCardTransmit", timeout: timeouts.deadline(for: command)) { () throws(PCSCError) in
            try PCSCLibrary.transmit(card, protocolT1: t1, command: command, receive: &buffer.bytes)
        }
    }

    /// Throws when the connection is closed: `.timeout` after a call overran (the reader still owes the answer),
    /// `.closed` (`SCARD_E_INVALID_HANDLE`) after `close()`.
    func checkConnected() throws(CardTransportError) {
        guard isConnected else {
            if watchdog.hasGivenUp {
                throw CardTransportError(
                    CardTimeoutError(
                        reader: readerName, timeout: timeouts.command, call: "SCardTransmit", stillWaiting: true))
            }
            throw CardTransportError(PCSCError.invalidHandle)
        }
    }

    /// The reader's name, state and the card's ATR as pcscd sees them now.
    ///
    /// The corresponding C function is `SCardStatus`.
    package func status() throws(CardTransportError) -> ReaderStatus {
        try checkConnected()
        let card = self.card
        let status = try call("SCardStatus") { () throws(PCSCError) in try PCSCLibrary.status(card) }
        // SCardStatus reports SCARD_ABSENT, SCARD_PRESENT, ... (not SCARD_STATE_ bits); translate.
        var state: ReaderState = []
        if status.state & 0x0004 != 0 { state.insert(.present) }  // SCARD_PRESENT
        if status.state & 0x0002 != 0 { state.insert(.empty) }  // SCARD_ABSENT
        if status.state & 0x0010 == 0, status.state & 0x0004 != 0 { state.insert(.unpowered) }  // !SCARD_POWERED
        return ReaderStatus(name: status.reader, state: state, atr: status.atr)
    }

    /// Closes the connection: drops a verified PIN (a reset, or VERIFY P1 = `FF` with `leavesCardWhenCleared`).
    ///
    /// Calling it again does nothing. After it, every call throws `.closed` (`SCARD_E_INVALID_HANDLE`).
    /// The corresponding C function is `SCardDisconnect`.
    package func disconnect() throws(CardTransportError) {
        guard isConnected else { return }
        let disposition = releaseDisposition()
        guard isConnected else { return }  // clearing the PINs overran: the watchdog resets the card
        let card = self.card
        isConnected = false
        verified.forget()
        do {
            try watchdog.run("SCardDisconnect", timeout: timeouts.command) { () throws(PCSCError) in
                try PCSCLibrary.disconnect(card, disposition: disposition.rawValue)
            }
        } catch {
            // After an overrun the watchdog resets the card once pcscd answers.
            if !watchdog.hasGivenUp { watchdog.watch(card: nil) }
            throw error
        }
        watchdog.watch(card: nil)
        handleDropped = true
    }

    /// Records the PINs a successful VERIFY, CHANGE REFERENCE DATA or RESET RETRY COUNTER left verified
    /// (ISO/IEC 7816-4, §11.5.6, §11.5.7, §11.5.10).
    private func noteSecurityState(command: [UInt8], answer: [UInt8]) {
        verified.note(command: command, answer: answer)
    }
}

/// A connection's receive buffer (`PCSCCardConnection.receiveBuffer`), used by one call at a time: the connection's
/// calls run one after another on its PC/SC thread, each waited for, and after an overrun nothing more is sent.
private final class ReceiveBuffer: @unchecked Sendable {
    var bytes = [UInt8](repeating: 0, count: PCSCLibrary.maxBufferSizeExtended)
}
