import FoundationEssentials
import Synchronization
import TokenpinCore
import TokenpinProtocol
internal import TokenpinSystem

// Listening: the socket (bound or passed by systemd), the accept loop, and shutdown.
extension Daemon {
    /// Takes the socket systemd passed (`LISTEN_FDS`), or binds `options.socketPath` (mode 0666: every user
    /// may connect; the peer check decides what they may do).
    package func listen() throws(DaemonError) {
        if let fd = Self.activationSocket() {
            listenFD.store(fd, ordering: .releasing)
            logger.info("listening on the socket systemd passed", [("fd", String(fd))])
            return
        }
        let path = options.socketPath
        let parent = Paths.parent(of: path)
        if !parent.isEmpty && !FileManager.default.fileExists(atPath: parent) {
            try? FileManager.default.createDirectory(
                atPath: parent, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o755])
        }
        // Something at the path (lstat succeeds): only a socket no daemon answers on is removed, never a file or
        // a symbolic link.
        if let isSocket = try? UnixSocket.isSocketEntry(at: path) {
            guard isSocket else { throw DaemonError("\(path) exists and is not a socket") }
            if (try? LineChannel.connect(path: path)) != nil {
                throw DaemonError("another tokenpind answers on \(path)")
            }
            try? Paths.removeFile(path)
        }
        let socket: FileDescriptor
        do {
            socket = try UnixSocket.listen(path: path, mode: 0o666, backlog: 128)
        } catch {
            if error == .nameTooLong { throw DaemonError("the socket path is too long: \(path)") }
            throw DaemonError("cannot listen on \(path): \(error)")
        }
        let fd = socket.release()
        listenFD.store(fd, ordering: .releasing)
        bound.store(true, ordering: .releasing)
        logger.info("listening", [("socket", path)])
    }

    /// Whether the daemon bound `options.socketPath` itself (and removes it at exit).
    package var boundSocketPath: Bool { bound.load(ordering: .acquiring) }

    /// The first socket passed by systemd socket activation, or nil.
    static func activationSocket() -> Int32? {
        // The two variables alone: the whole environment as a dictionary (`ProcessInfo.environment`) cost about 1.4
        // million instructions at every start, which a socket-activated first login waits for.
        guard let pid = CurrentProcess.environmentValue("LISTEN_PID").flatMap(Int32.init), pid == CurrentProcess.id,
            let count = CurrentProcess.environmentValue("LISTEN_FDS").flatMap(Int.init), count >= 1
        else { return nil }
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { try? CurrentProcess.removeEnvironmentValue(name) }
        let fd: Int32 = 3  // SD_LISTEN_FDS_START
        FileDescriptor.withBorrowed(fd) { try? $0.setCloseOnExec() }
        return fd
    }

    /// Accepts connections until `beginShutdown`, starting a thread for each (and the reader watcher).
    package func serve() {
        if let source = options.readerEvents {
            ReaderWatcher(
                source: source, hub: hub, cardRemoval: cardRemoval, logger: logger,
                retrySeconds: options.readerRetrySeconds
            ) { [self] in isDraining }.start()
        }
        let listening = FileDescriptor(owning: listenFD.load(ordering: .acquiring))  // closed when the loop ends
        while !isDraining {
            guard (try? listening.waitForInput(timeoutMilliseconds: 200)) == true,
                let accepted = try? listening.accept()
            else { continue }
            // A peer that stops reading makes a write fail after the timeout, so no reply or prompt can block a
            // thread (and what it holds) for longer.
            try? accepted.setSendTimeout(milliseconds: options.sendTimeoutMilliseconds)
            guard let peer = Peer.of(socket: accepted.rawValue) else { continue }  // `accepted` closes it
            let client = accepted.release()
            guard connections.open(uid: peer.accountingUID) else {
                let channel = LineChannel(fd: client)
                try? channel.send(ProtocolError(.busy, "too many connections; try again").message)
                logger.warning("connection refused: limit reached", [("peer.uid", String(peer.uid))])
                continue
            }
            do {
                try DetachedThread.start(stackSize: 1 << 20) { [self] in
                    defer { connections.close(uid: peer.accountingUID) }
                    serveConnection(fd: client, peer: peer)
                }
            } catch {
                // No thread, so nothing serves the client: its slot and descriptor go back now.
                connections.close(uid: peer.accountingUID)
                try? FileDescriptor(owning: client).close()
                logger.warning("connection dropped: no thread for it", [("error", error.description)])
            }
        }
    }

    /// Stops accepting; idle connections close and prompts are abandoned; running operations finish.
    package func beginShutdown() {
        draining.store(true, ordering: .releasing)
    }

    /// Waits until no operation runs (at most `seconds`); true when none does.
    package func waitForOperations(seconds: Double) -> Bool {
        operations.waitForZero(seconds: seconds)
    }

    /// Operations running now.
    package var operationsInFlight: Int { operations.count }
}

/// Counts running operations, so shutdown can wait for them.
final class OperationCounter: @unchecked Sendable {
    // @unchecked Sendable: `value` is read and written only while `condition` is locked.
    private let condition = Condition()
    private var value = 0

    func increment() {
        condition.lock()
        value += 1
        condition.unlock()
    }

    func decrement() {
        condition.lock()
        value -= 1
        condition.broadcast()
        condition.unlock()
    }

    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return value
    }

    func waitForZero(seconds: Double) -> Bool {
        let deadline = Condition.Deadline(secondsFromNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while value > 0 {
            if !condition.wait(until: deadline) { return value == 0 }
        }
        return true
    }
}
