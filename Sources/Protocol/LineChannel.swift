import Dispatch
package import TokenpinCore
internal import TokenpinSystem

/// Newline-delimited frames over a connected stream socket, with a line limit and read timeouts.
///
/// Owns the descriptor and closes it on release. Reads use `poll` so a silent peer times out; writes use
/// `MSG_NOSIGNAL` so a peer that went away is an error, not a `SIGPIPE`.
///
/// A line may hold a secret, so received bytes live in one buffer allocated once, large enough for the longest
/// line and one read, which never grows or moves: `recv` writes into it directly, a line that spans several reads
/// is assembled in place, and the bytes a line leaves behind are zeroed when it is taken out. The whole buffer is
/// wiped before it is released.
package final class LineChannel {
    /// The socket.
    package let fd: Int32
    /// The longest line accepted, newline excluded.
    package let maximumLineLength: Int
    /// The most bytes one `recv` asks for.
    static let readSize = 4096
    /// Received bytes: `buffer[0..<buffered]` not yet returned, the rest zero. Allocated on the first read.
    private var buffer: UnsafeMutableRawBufferPointer?
    private var buffered = 0
    private var closed = false

    /// Wraps a connected socket.
    package init(fd: Int32, maximumLineLength: Int = ProtocolLimits.maximumLineLength) {
        self.fd = fd
        self.maximumLineLength = max(0, min(maximumLineLength, ProtocolLimits.maximumLineLength))
    }

    deinit {
        if let buffer {
            secureZero(buffer)
            buffer.deallocate()
        }
        if !closed { try? FileDescriptor(owning: fd).close() }
    }

    /// The receive buffer, allocated zeroed on first use with room for the longest line, its newline and one read.
    private func receiveBuffer() -> UnsafeMutableRawBufferPointer {
        if let buffer { return buffer }
        let fresh = UnsafeMutableRawBufferPointer.allocate(
            byteCount: maximumLineLength + 1 + Self.readSize, alignment: 1)
        fresh.initializeMemory(as: UInt8.self, repeating: 0)
        buffer = fresh
        return fresh
    }

    /// Zeroes every buffered byte.
    private func discardBuffered() {
        if let buffer { secureZero(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<buffered])) }
        buffered = 0
    }

    /// Takes `buffer[0..<length]` out as a line, drops the newline after it, moves what follows to the front and
    /// zeroes the bytes left behind.
    private func takeLine(length: Int, from buffer: UnsafeMutableRawBufferPointer) -> [UInt8] {
        let line = [UInt8](UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
        let rest = buffered - (length + 1)
        if rest > 0, let base = buffer.baseAddress {
            base.copyMemory(from: base + length + 1, byteCount: rest)  // the regions may overlap (memmove)
        }
        secureZero(UnsafeMutableRawBufferPointer(rebasing: buffer[rest..<buffered]))
        buffered = rest
        return line
    }

    /// A copy of the whole receive buffer, for tests that check what stays in memory.
    var receiveBufferSnapshot: (bytes: [UInt8], buffered: Int) {
        guard let buffer else { return ([], 0) }
        return ([UInt8](UnsafeRawBufferPointer(buffer)), buffered)
    }

    /// Closes the socket now.
    package func close() {
        guard !closed else { return }
        closed = true
        try? FileDescriptor(owning: fd).close()
    }

    /// Shuts both directions down, waking a thread blocked on it.
    package func shutdown() {
        guard !closed else { return }
        try? FileDescriptor.withBorrowed(fd) { (socket) throws(Errno) in try socket.shutdown() }
    }

    /// Connects to the Unix socket at `path`.
    package static func connect(path: String, timeoutMilliseconds: Int32 = 5000) throws(ProtocolError) -> LineChannel {
        let address: UnixSocketAddress
        do {
            address = try UnixSocketAddress(path: path)
        } catch {
            if error == .nameTooLong { throw ProtocolError(.io, "the socket path is too long") }
            throw ProtocolError(.closed, "cannot connect to \(path): \(error)")
        }
        let socket: FileDescriptor
        do {
            socket = try FileDescriptor.unixStreamSocket()
        } catch {
            throw ProtocolError(.io, "cannot create a socket")
        }
        // Bounds connect (Linux applies the send timeout to it on Unix stream sockets) and every write, so a
        // wedged daemon with a full backlog cannot hang the client.
        try? socket.setSendTimeout(milliseconds: Int(timeoutMilliseconds))
        do {
            try socket.connect(to: address)
        } catch {
            throw ProtocolError(.closed, "cannot connect to \(path): \(error)")
        }
        return LineChannel(fd: socket.release())
    }

    /// Reads one line, without its newline, waiting at most `timeoutMilliseconds` for all of it (-1: forever).
    ///
    /// The limit covers the whole line, so a peer trickling a byte at a time cannot hold the connection open.
    ///
    /// Throws `.closed` at a clean end of stream, `.truncated` when the stream ends inside a line, `.oversized`
    /// past the limit, `.timeout` when the peer is silent. The caller wipes a returned line that held a secret.
    package func readLine(timeoutMilliseconds: Int32, deadline: (() -> Bool)? = nil) throws(ProtocolError) -> [UInt8] {
        let start = DispatchTime.now().uptimeNanoseconds
        let buffer = receiveBuffer()
        while true {
            if let newline = UnsafeRawBufferPointer(rebasing: buffer[0..<buffered]).firstIndex(of: 0x0A) {
                guard newline <= maximumLineLength else {
                    discardBuffered()
                    throw ProtocolError(.oversized, "a line is longer than \(maximumLineLength) bytes")
                }
                return takeLine(length: newline, from: buffer)
            }
            guard buffered <= maximumLineLength else {
                discardBuffered()
                throw ProtocolError(.oversized, "a line is longer than \(maximumLineLength) bytes")
            }
            var left = timeoutMilliseconds
            if timeoutMilliseconds >= 0 {
                let spent = Int64((DispatchTime.now().uptimeNanoseconds &- start) / 1_000_000)
                left = Int32(clamping: max(0, Int64(timeoutMilliseconds) - spent))
                if left == 0 {
                    discardBuffered()
                    throw ProtocolError(.timeout, "no complete message arrived in time")
                }
            }
            do {
                try waitReadable(timeoutMilliseconds: left, deadline: deadline)
            } catch {
                discardBuffered()
                throw error
            }
            // At most `maximumLineLength` bytes are buffered here, so a whole read always fits behind them.
            let free = UnsafeMutableRawBufferPointer(rebasing: buffer[buffered..<(buffered + Self.readSize)])
            let count: Int
            do {
                count = try FileDescriptor.withBorrowed(fd) { (socket) throws(Errno) in try socket.receive(into: free) }
            } catch {
                if error == .interrupted || error == .wouldBlock { continue }
                discardBuffered()
                throw ProtocolError(.io, "cannot read the socket: \(error)")
            }
            if count == 0 {
                if buffered == 0 { throw ProtocolError(.closed, "the peer closed the connection") }
                discardBuffered()
                throw ProtocolError(.truncated, "the connection closed in the middle of a message")
            }
            buffered += count
        }
    }

    /// Waits until the socket is readable; `deadline` is polled every 200 ms and ends the wait when it says so.
    private func waitReadable(timeoutMilliseconds: Int32, deadline: (() -> Bool)?) throws(ProtocolError) {
        var waited: Int32 = 0
        while true {
            let slice: Int32 = timeoutMilliseconds < 0 ? 200 : min(200, max(0, timeoutMilliseconds - waited))
            do {
                let ready = try FileDescriptor.withBorrowed(fd) { (socket) throws(Errno) in
                    try socket.waitForInput(timeoutMilliseconds: slice)
                }
                if ready { return }
                waited += slice
            } catch {
                // A signal ended the wait early: it counts no time, and the wait goes on.
                if error != .interrupted { throw ProtocolError(.io, "cannot poll the socket") }
            }
            if let deadline, deadline() { throw ProtocolError(.busy, "the daemon is shutting down") }
            if timeoutMilliseconds >= 0 && waited >= timeoutMilliseconds {
                throw ProtocolError(.timeout, "no complete message arrived in time")
            }
        }
    }

    /// Writes all of `bytes`; throws when the peer is gone (no `SIGPIPE`) or a write times out.
    package func write(_ bytes: [UInt8]) throws(ProtocolError) {
        do {
            try FileDescriptor.withBorrowed(fd) { (socket) throws(Errno) in try socket.sendAll(bytes) }
        } catch {
            throw ProtocolError(.closed, "cannot write to the peer: \(error)")
        }
    }

    /// Writes one message.
    package func send(_ message: ServerMessage) throws(ProtocolError) { try write(message.line) }

    /// Writes a `secret` message for `prompt`, quoted straight from guarded memory; the line is wiped before this
    /// returns.
    package func sendSecret(prompt: String, _ secret: borrowing SecretBytes) throws(ProtocolError) {
        var writer = ClientMessage.secretWriter(prompt: prompt, count: secret.count)
        writer.appendSecret("value", secret)
        try send(writer)
    }

    /// Finishes and writes a line, then wipes it (it may hold a secret).
    package func send(_ writer: consuming LineWriter) throws(ProtocolError) {
        var line = writer.finish()
        defer { wipe(&line) }
        try write(line)
    }

    /// Writes one message; a `secret` line is wiped after it is written.
    package func send(_ message: ClientMessage) throws(ProtocolError) {
        var line = message.line
        defer { wipe(&line) }
        try write(line)
    }
}
