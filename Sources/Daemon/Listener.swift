import Foundation
import Synchronization
import TokenpinCore
import TokenpinProtocol
internal import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

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
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else { throw DaemonError("\(path) exists and is not a socket") }
            if (try? LineChannel.connect(path: path)) != nil {
                throw DaemonError("another tokenpind answers on \(path)")
            }
            unlink(path)
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
        let environment = ProcessInfo.processInfo.environment
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
            let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1
        else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        let fd: Int32 = 3  // SD_LISTEN_FDS_START
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
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
        let fd = listenFD.load(ordering: .acquiring)
        while !isDraining {
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pollfd, 1, 200) > 0 else { continue }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            Self.limitWrites(socket: client, milliseconds: options.sendTimeoutMilliseconds)
            guard let peer = Peer.of(socket: client) else {
                close(client)
                continue
            }
            guard connections.open(uid: peer.accountingUID) else {
                let channel = LineChannel(fd: client)
                try? channel.send(ProtocolError(.busy, "too many connections; try again").message)
                logger.warning("connection refused: limit reached", [("peer.uid", String(peer.uid))])
                continue
            }
            let thread = Thread { [self] in
                defer { connections.close(uid: peer.accountingUID) }
                serveConnection(fd: client, peer: peer)
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        close(fd)
    }

    /// Bounds every write to `fd`: a peer that stops reading makes a write fail after `milliseconds`, so no reply
    /// or prompt can block a thread (and what it holds) for longer.
    ///
    /// The corresponding C function is `setsockopt(SO_SNDTIMEO)`.
    static func limitWrites(socket fd: Int32, milliseconds: Int) {
        var limit = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
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
    private let condition = NSCondition()
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
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while value > 0 {
            if !condition.wait(until: deadline) { return value == 0 }
        }
        return true
    }
}
