#if canImport(Glibc)
    import Glibc
#endif

/// The address of a Unix domain socket: a path in `sockaddr_un`, built and checked in one place.
package struct UnixSocketAddress: Sendable {
    /// The path.
    package let path: String
    private let storage: sockaddr_un

    /// The longest path `sun_path` holds with its terminating NUL (107 bytes on Linux).
    package static var maximumPathLength: Int { MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1 }

    /// The address of `path`; an empty path or one with a NUL is `.invalidArgument`, a longer one than
    /// `maximumPathLength` is `.nameTooLong`.
    package init(path: String) throws(Errno) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, !bytes.contains(0) else { throw Errno.invalidArgument }
        guard bytes.count <= Self.maximumPathLength else { throw Errno.nameTooLong }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        self.path = path
        self.storage = address
    }

    /// Calls `body` with the address as the `sockaddr` the socket calls take.
    fileprivate func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}

extension FileDescriptor {
    /// A new Unix stream socket (close-on-exec).
    ///
    /// The corresponding C function is `socket`.
    package static func unixStreamSocket() throws(Errno) -> FileDescriptor {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Errno.current }
        return FileDescriptor(owning: fd)
    }

    /// A new Unix datagram socket (close-on-exec).
    ///
    /// The corresponding C function is `socket`.
    package static func unixDatagramSocket() throws(Errno) -> FileDescriptor {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Errno.current }
        return FileDescriptor(owning: fd)
    }

    /// Sends `bytes` as one datagram to `address`, retrying `EINTR`; never blocks (`MSG_DONTWAIT`), so a reader that
    /// is not keeping up loses the datagram (`.wouldBlock`) instead of stalling the sender.
    ///
    /// The corresponding C function is `sendto`.
    package func sendDatagram(_ bytes: [UInt8], to address: UnixSocketAddress) throws(Errno) {
        let fd = rawValue
        while true {
            let sent = bytes.withUnsafeBytes { buffer in
                address.withSocketAddress {
                    sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL), $0, $1)
                }
            }
            if sent >= 0 { return }
            let error = Errno.current
            if error != .interrupted { throw error }
        }
    }

    /// Connects this socket to `address`.
    ///
    /// Not retried on `EINTR` (the connection then completes in the background). The corresponding C function
    /// is `connect`.
    package func connect(to address: UnixSocketAddress) throws(Errno) {
        let fd = rawValue
        guard address.withSocketAddress({ Glibc.connect(fd, $0, $1) }) == 0 else { throw Errno.current }
    }

    /// Binds this socket to `address`, creating the socket file.
    ///
    /// The corresponding C function is `bind`.
    package func bind(to address: UnixSocketAddress) throws(Errno) {
        let fd = rawValue
        guard address.withSocketAddress({ Glibc.bind(fd, $0, $1) }) == 0 else { throw Errno.current }
    }

    /// Marks this bound socket as accepting connections, with a queue of `backlog`.
    ///
    /// The corresponding C function is `listen`.
    package func listen(backlog: Int32) throws(Errno) {
        guard Glibc.listen(rawValue, backlog) == 0 else { throw Errno.current }
    }

    /// Receives at most `buffer.count` bytes into `buffer` itself (no copy is made: a secret stays where the caller
    /// wipes it); 0 means the peer closed its end.
    ///
    /// One call, not retried: a signal is `.interrupted` and an empty non-blocking socket `.wouldBlock`, for a caller
    /// that polls with its own deadline before it reads again. The corresponding C function is `recv`.
    package func receive(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        let count = recv(rawValue, buffer.baseAddress, buffer.count, 0)
        guard count >= 0 else { throw Errno.current }
        return count
    }

    /// Accepts a connection on this listening socket, then makes the new socket close-on-exec (Glibc hides
    /// `accept4`; a failure to set the flag on the new descriptor, which cannot happen, is not reported).
    ///
    /// One call, not retried: a signal is `.interrupted`, a peer that gave up first `ECONNABORTED`, for an accept loop
    /// that polls and tries again. The corresponding C functions are `accept` and `fcntl(F_SETFD, FD_CLOEXEC)`.
    package func accept() throws(Errno) -> FileDescriptor {
        let client = Glibc.accept(rawValue, nil, nil)
        guard client >= 0 else { throw Errno.current }
        let accepted = FileDescriptor(owning: client)
        try? accepted.setCloseOnExec()
        return accepted
    }

    /// Sends all of `bytes` on this socket without ever blocking (`MSG_DONTWAIT`): a peer whose buffer is full is
    /// `.wouldBlock`, one that went away `.brokenPipe`; see `sendAll(_:flags:)`.
    ///
    /// The corresponding C function is `send(MSG_DONTWAIT)`.
    package func sendAllWithoutWaiting(_ bytes: [UInt8]) throws(Errno) {
        try sendAll(bytes, flags: Int32(MSG_DONTWAIT))
    }

    /// Shuts both directions of this socket down, waking a thread blocked reading or writing it; the descriptor
    /// stays open.
    ///
    /// The corresponding C function is `shutdown(SHUT_RDWR)`.
    package func shutdown() throws(Errno) {
        guard Glibc.shutdown(rawValue, Int32(SHUT_RDWR)) == 0 else { throw Errno.current }
    }

    /// Bounds every send (and, on a Unix stream socket, `connect`) to `milliseconds`; past it they fail with
    /// `.wouldBlock`.
    ///
    /// The corresponding C function is `setsockopt(SO_SNDTIMEO)`.
    package func setSendTimeout(milliseconds: Int) throws(Errno) {
        let milliseconds = max(0, milliseconds)
        var limit = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        guard setsockopt(rawValue, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
            throw Errno.current
        }
    }
}

/// The things done with a Unix socket path: connect to it, bind and listen on it, or check what is there.
package enum UnixSocket {
    /// Whether the entry at `path` itself is a socket (a symbolic link, even to a socket, is not); throws what
    /// `lstat` reports when there is no entry to look at (`.noSuchFileOrDirectory` when nothing is there).
    ///
    /// The corresponding C function is `lstat`.
    package static func isSocketEntry(at path: String) throws(Errno) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw Errno.current }
        return info.st_mode & S_IFMT == S_IFSOCK
    }

    /// A stream socket connected to `path`, its sends (and the connect itself) bounded by
    /// `sendTimeoutMilliseconds` when given.
    ///
    /// The corresponding C function is `connect`.
    package static func connect(path: String, sendTimeoutMilliseconds: Int? = nil) throws(Errno) -> FileDescriptor {
        let address = try UnixSocketAddress(path: path)
        let socket = try FileDescriptor.unixStreamSocket()
        if let sendTimeoutMilliseconds { try socket.setSendTimeout(milliseconds: sendTimeoutMilliseconds) }
        try socket.connect(to: address)
        return socket
    }

    /// A stream socket bound to `path` (which must not exist), given `mode` when set, and listening.
    ///
    /// The mode is set before `listen`, so no connection is accepted under the umask's mode. The corresponding
    /// C functions are `bind` and `listen`.
    package static func listen(path: String, mode: mode_t? = nil, backlog: Int32 = 128) throws(Errno) -> FileDescriptor
    {
        let address = try UnixSocketAddress(path: path)
        let socket = try FileDescriptor.unixStreamSocket()
        try socket.bind(to: address)
        if let mode, chmod(path, mode) != 0 { throw Errno.current }
        try socket.listen(backlog: backlog)
        return socket
    }
}
