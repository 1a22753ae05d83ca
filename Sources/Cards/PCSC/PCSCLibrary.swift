internal import CPCSCLite

/// The pcsc-lite functions tokenpin uses, each wrapped once.
///
/// This is the only file that sees `LONG`, `DWORD`, `SCARDCONTEXT`, `SCARDHANDLE` and the C structs; every
/// conversion between them and Swift integers happens here. All calls block the calling thread until pcscd
/// answers; callers keep them off the cooperative thread pool.
enum PCSCLibrary {
    /// A context handle as a Swift integer.
    typealias Context = Int
    /// A card handle as a Swift integer.
    typealias Card = Int

    /// `MAX_BUFFER_SIZE_EXTENDED`, which does not import: 64 KiB of data plus header, Lc, Le and SW.
    static let maxBufferSizeExtended = 4 + 3 + (1 << 16) + 3 + 2
    /// `MAX_READERNAME`.
    static let maxReaderName = 128
    /// `MAX_ATR_SIZE`.
    static let maxATRSize = 33
    /// `INFINITE`, as a timeout.
    static let infiniteTimeout: UInt32 = 0xFFFF_FFFF
    /// The reader name that reports readers arriving and leaving in `SCardGetStatusChange`.
    static let plugAndPlayReaderName = "\\\\?PnP?\\Notification"

    /// Turns a pcsc-lite return value into a thrown `PCSCError`.
    static func check(_ result: LONG) throws(PCSCError) {
        guard result != 0 else { return }  // SCARD_S_SUCCESS
        throw PCSCError(rawValue: UInt32(truncatingIfNeeded: result))
    }

    /// pcsc-lite's text for a code.
    ///
    /// The corresponding C function is `pcsc_stringify_error`.
    static func stringify(_ code: UInt32) -> String {
        guard let text = pcsc_stringify_error(LONG(code)) else { return "Unknown PC/SC error." }
        return String(cString: text)
    }

    /// Opens a context with pcscd, system scope.
    ///
    /// The corresponding C function is `SCardEstablishContext`.
    static func establishContext() throws(PCSCError) -> Context {
        var context: SCARDCONTEXT = 0
        try check(SCardEstablishContext(DWORD(SCARD_SCOPE_SYSTEM), nil, nil, &context))
        return Context(context)
    }

    /// Closes a context; pcscd drops its card handles with it.
    ///
    /// The corresponding C function is `SCardReleaseContext`.
    @discardableResult
    static func releaseContext(_ context: Context) -> PCSCError? {
        let result = SCardReleaseContext(SCARDCONTEXT(context))
        return result == 0 ? nil : PCSCError(rawValue: UInt32(truncatingIfNeeded: result))
    }

    /// Whether pcscd still knows the context.
    ///
    /// The corresponding C function is `SCardIsValidContext`.
    static func isValidContext(_ context: Context) -> Bool {
        SCardIsValidContext(SCARDCONTEXT(context)) == 0
    }

    /// The reader names as pcsc-lite returns them: a multi-string, each name NUL-terminated, then a NUL.
    ///
    /// Retries when a reader arrives between the size query and the copy. No reader at all is
    /// `SCARD_E_NO_READERS_AVAILABLE`. The corresponding C function is `SCardListReaders`.
    static func listReaders(_ context: Context) throws(PCSCError) -> [UInt8] {
        for _ in 0..<4 {
            var length: DWORD = 0
            try check(SCardListReaders(SCARDCONTEXT(context), nil, nil, &length))
            guard length > 0, length < 1 << 20 else { return [] }
            var buffer = [CChar](repeating: 0, count: Int(length))
            let result = buffer.withUnsafeMutableBufferPointer { pointer in
                SCardListReaders(SCARDCONTEXT(context), nil, pointer.baseAddress, &length)
            }
            if UInt32(truncatingIfNeeded: result) == PCSCError.insufficientBuffer.rawValue { continue }
            try check(result)
            return buffer.prefix(min(Int(length), buffer.count)).map { UInt8(bitPattern: $0) }
        }
        throw PCSCError.insufficientBuffer
    }

    /// Connects to the card in `reader`; returns the card handle and the protocol in use.
    ///
    /// The corresponding C function is `SCardConnect`.
    static func connect(
        _ context: Context, reader: String, shareMode: UInt32,
        protocols: UInt32
    ) throws(PCSCError) -> (card: Card, activeProtocol: UInt32) {
        var card: SCARDHANDLE = 0
        var active: DWORD = 0
        try check(SCardConnect(SCARDCONTEXT(context), reader, DWORD(shareMode), DWORD(protocols), &card, &active))
        return (Card(card), UInt32(truncatingIfNeeded: active))
    }

    /// Re-establishes a connection after the card was reset (by us or another process).
    ///
    /// The corresponding C function is `SCardReconnect`.
    static func reconnect(
        _ card: Card, shareMode: UInt32, protocols: UInt32,
        initialization: UInt32
    ) throws(PCSCError) -> UInt32 {
        var active: DWORD = 0
        try check(
            SCardReconnect(
                SCARDHANDLE(card), DWORD(shareMode), DWORD(protocols), DWORD(initialization),
                &active))
        return UInt32(truncatingIfNeeded: active)
    }

    /// Closes a card handle, leaving, resetting or unpowering the card.
    ///
    /// The corresponding C function is `SCardDisconnect`.
    static func disconnect(_ card: Card, disposition: UInt32) throws(PCSCError) {
        try check(SCardDisconnect(SCARDHANDLE(card), DWORD(disposition)))
    }

    /// Takes the card for this handle alone until `endTransaction`.
    ///
    /// The corresponding C function is `SCardBeginTransaction`.
    static func beginTransaction(_ card: Card) throws(PCSCError) {
        try check(SCardBeginTransaction(SCARDHANDLE(card)))
    }

    /// Releases the card, leaving or resetting it.
    ///
    /// The corresponding C function is `SCardEndTransaction`.
    static func endTransaction(_ card: Card, disposition: UInt32) throws(PCSCError) {
        try check(SCardEndTransaction(SCARDHANDLE(card), DWORD(disposition)))
    }

    /// The reader name, state bits, protocol and ATR of a connected card.
    ///
    /// The corresponding C function is `SCardStatus`.
    static func status(_ card: Card) throws(PCSCError) -> (
        reader: String, state: UInt32, activeProtocol: UInt32,
        atr: [UInt8]
    ) {
        var name = [CChar](repeating: 0, count: maxReaderName + 1)
        var nameLength = DWORD(maxReaderName)
        var state: DWORD = 0
        var active: DWORD = 0
        var atr = [UInt8](repeating: 0, count: maxATRSize)
        var atrLength = DWORD(maxATRSize)
        try check(SCardStatus(SCARDHANDLE(card), &name, &nameLength, &state, &active, &atr, &atrLength))
        name[maxReaderName] = 0
        let reader = ReaderList.decodeName(
            name.prefix(Int(min(nameLength, DWORD(maxReaderName)))).map {
                UInt8(bitPattern: $0)
            })
        return (
            reader, UInt32(truncatingIfNeeded: state), UInt32(truncatingIfNeeded: active),
            Array(atr.prefix(Int(min(atrLength, DWORD(maxATRSize)))))
        )
    }

    /// Sends `command` and writes the answer into `receive`; returns the number of bytes written.
    ///
    /// `g_rgSCardT0Pci` or `g_rgSCardT1Pci` goes in by pointer (`SCARD_PCI_T1` does not import).
    /// The corresponding C function is `SCardTransmit`.
    static func transmit(
        _ card: Card, protocolT1: Bool, command: [UInt8],
        receive: inout [UInt8]
    ) throws(PCSCError) -> Int {
        var length = DWORD(receive.count)
        let result: LONG = receive.withUnsafeMutableBufferPointer { out in
            command.withUnsafeBufferPointer { input in
                if protocolT1 {
                    withUnsafePointer(to: g_rgSCardT1Pci) { pci in
                        SCardTransmit(
                            SCARDHANDLE(card), pci, input.baseAddress, DWORD(input.count), nil,
                            out.baseAddress, &length)
                    }
                } else {
                    withUnsafePointer(to: g_rgSCardT0Pci) { pci in
                        SCardTransmit(
                            SCARDHANDLE(card), pci, input.baseAddress, DWORD(input.count), nil,
                            out.baseAddress, &length)
                    }
                }
            }
        }
        try check(result)
        return Int(min(length, DWORD(receive.count)))
    }

    /// One reader's entry for `getStatusChange`, in Swift terms.
    struct ReaderStateEntry {
        var reader: String
        var currentState: UInt32
        var eventState: UInt32 = 0
        var atr: [UInt8] = []
    }

    /// Waits until the state of one of `entries` differs from its `currentState`, or `timeout` (ms) passes.
    ///
    /// Fills in `eventState` and `atr`. Returns false when the timeout passed without a change.
    /// The corresponding C function is `SCardGetStatusChange`.
    static func getStatusChange(
        _ context: Context, timeout: UInt32,
        entries: inout [ReaderStateEntry]
    ) throws(PCSCError) -> Bool {
        guard !entries.isEmpty else { return false }
        // The reader names must stay valid C strings for the whole call: copies that live until it returns.
        let names: [UnsafeMutablePointer<CChar>] = entries.map { entry in
            let bytes = entry.reader.utf8CString
            let name = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
            _ = UnsafeMutableBufferPointer(start: name, count: bytes.count).initialize(from: bytes)
            return name
        }
        defer {
            for name in names { name.deallocate() }
        }
        var states = entries.indices.map { index in
            var state = SCARD_READERSTATE()
            state.szReader = UnsafePointer(names[index])
            state.pvUserData = nil
            state.dwCurrentState = DWORD(entries[index].currentState)
            state.dwEventState = 0
            state.cbAtr = 0
            return state
        }
        let result = SCardGetStatusChange(SCARDCONTEXT(context), DWORD(timeout), &states, DWORD(states.count))
        if UInt32(truncatingIfNeeded: result) == PCSCError.timeout.rawValue { return false }
        try check(result)
        for index in entries.indices {
            entries[index].eventState = UInt32(truncatingIfNeeded: states[index].dwEventState)
            let count = min(Int(states[index].cbAtr), maxATRSize)
            entries[index].atr = withUnsafeBytes(of: states[index].rgbAtr) { Array($0.prefix(count)) }
        }
        return true
    }

    /// Makes a blocking `SCardGetStatusChange` on `context` return `SCARD_E_CANCELLED`; safe from any thread.
    ///
    /// The corresponding C function is `SCardCancel`.
    static func cancel(_ context: Context) throws(PCSCError) {
        try check(SCardCancel(SCARDCONTEXT(context)))
    }
}
