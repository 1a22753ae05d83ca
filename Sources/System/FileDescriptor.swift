#if canImport(Glibc)
    import Glibc
#endif

/// An open file descriptor, closed when its owner goes away.
///
/// Non-copyable: exactly one value owns the descriptor, and its `deinit` closes it. `release()` hands the raw
/// descriptor to code that manages it itself; `withBorrowed` lends this API to a descriptor owned elsewhere.
/// Every read and write retries when a signal interrupts it (`EINTR`), but `receive(into:)`, whose callers poll
/// between reads.
package struct FileDescriptor: ~Copyable {
    /// The raw descriptor.
    package let rawValue: Int32

    /// Takes ownership of `rawValue`: it is closed when this value goes away.
    package init(owning rawValue: Int32) { self.rawValue = rawValue }

    deinit { _ = Glibc.close(rawValue) }

    /// Gives up ownership and returns the raw descriptor, which the caller must close.
    package consuming func release() -> Int32 {
        let raw = rawValue
        discard self
        return raw
    }

    /// Closes the descriptor now, reporting a failure (a deferred write error on some file systems).
    ///
    /// Not retried on `EINTR`: Linux has released the descriptor by then. The corresponding C function is `close`.
    package consuming func close() throws(Errno) {
        let raw = rawValue
        discard self
        guard Glibc.close(raw) == 0 else { throw Errno.current }
    }

    /// Runs `body` with a descriptor owned elsewhere; it is not closed afterwards.
    package static func withBorrowed<R, E: Error>(
        _ rawValue: Int32, _ body: (borrowing FileDescriptor) throws(E) -> R
    ) throws(E) -> R {
        let descriptor = FileDescriptor(owning: rawValue)
        let result: Result<R, E>
        do throws(E) {
            result = .success(try body(descriptor))
        } catch {
            result = .failure(error)
        }
        _ = descriptor.release()
        return try result.get()
    }

    // MARK: Opening

    /// Opens `path` with `flags` (`O_CLOEXEC` is always added), creating it with `mode` when `O_CREAT` is given.
    ///
    /// The corresponding C function is `open`.
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(Errno) -> FileDescriptor {
        try retryingInterrupts { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    /// Opens `name` relative to the open directory `directory`; see `open(_:_:mode:)`.
    ///
    /// The corresponding C function is `openat`.
    package static func open(
        _ name: String, relativeTo directory: borrowing FileDescriptor, _ flags: Int32, mode: mode_t = 0
    ) throws(Errno) -> FileDescriptor {
        let directoryFD = directory.rawValue
        return try retryingInterrupts { openat(directoryFD, name, flags | O_CLOEXEC, mode) }
    }

    /// Creates `path` as a new file for writing with exactly `mode`: never an existing file, never through a
    /// symbolic link (either is `.fileExists`, a dangling link too), and the umask cannot take bits away.
    ///
    /// The corresponding C functions are `open(O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW)` and `fchmod`.
    package static func createNew(_ path: String, mode: mode_t) throws(Errno) -> FileDescriptor {
        let file = try open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
        try file.setPermissions(mode)
        return file
    }

    /// Opens `path` for reading only; see `open(_:_:mode:)`.
    ///
    /// The corresponding C function is `open(O_RDONLY)`.
    package static func openForReading(_ path: String) throws(Errno) -> FileDescriptor {
        try open(path, O_RDONLY)
    }

    /// How a file is opened: for reading, writing or both.
    package enum AccessMode: Sendable {
        /// `O_RDONLY`.
        case readOnly
        /// `O_WRONLY`.
        case writeOnly
        /// `O_RDWR`.
        case readWrite

        /// The `open` flag.
        package var rawValue: Int32 {
            switch self {
            case .readOnly: O_RDONLY
            case .writeOnly: O_WRONLY
            case .readWrite: O_RDWR
            }
        }
    }

    /// The `open` flags beside the access mode (`O_CLOEXEC` is always added).
    package struct OpenOptions: OptionSet, Sendable {
        /// The `open` flags.
        package let rawValue: Int32

        /// Wraps `open` flags.
        package init(rawValue: Int32) { self.rawValue = rawValue }

        /// `O_CREAT`: create the file when it does not exist, with the given permissions.
        package static let create = OpenOptions(rawValue: O_CREAT)
        /// `O_EXCL` (with `create`): fail with `.fileExists` when the path exists, a symbolic link included.
        package static let exclusiveCreate = OpenOptions(rawValue: O_EXCL)
        /// `O_NOFOLLOW`: a symbolic link as the last component is `.tooManySymbolicLinkLevels`.
        package static let noFollow = OpenOptions(rawValue: O_NOFOLLOW)
        /// `O_NONBLOCK`: open without waiting (a FIFO with no writer opens at once).
        package static let nonBlocking = OpenOptions(rawValue: O_NONBLOCK)
        /// `O_APPEND`: every write goes to the end of the file, as one step.
        package static let append = OpenOptions(rawValue: O_APPEND)
        /// `O_DIRECTORY`: anything but a directory is `.notDirectory`.
        package static let directory = OpenOptions(rawValue: O_DIRECTORY)
    }

    /// Opens `path` for `access` with `options` (`O_CLOEXEC` is always added), creating it with `permissions`
    /// when `.create` is given.
    ///
    /// The corresponding C function is `open`.
    package static func open(
        _ path: String, _ access: AccessMode, options: OpenOptions = [], permissions: mode_t = 0
    ) throws(Errno) -> FileDescriptor {
        try open(path, access.rawValue | options.rawValue, mode: permissions)
    }

    private static func retryingInterrupts(_ call: () -> Int32) throws(Errno) -> FileDescriptor {
        while true {
            let fd = call()
            if fd >= 0 { return FileDescriptor(owning: fd) }
            guard errno == EINTR else { throw Errno.current }
        }
    }

    // MARK: Writing

    /// Writes all of `buffer`, retrying short writes and `EINTR`; any other failure throws.
    ///
    /// The corresponding C function is `write`.
    package func writeAll(_ buffer: UnsafeRawBufferPointer) throws(Errno) {
        let fd = rawValue
        try Self.transferAll(buffer) { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    /// Writes all of `bytes`; see `writeAll(_:)`.
    package func writeAll(_ bytes: [UInt8]) throws(Errno) {
        try bytes.withUnsafeBytes { buffer in Result { () throws(Errno) in try writeAll(buffer) } }.get()
    }

    /// Sends all of `buffer` on a socket, retrying short sends and `EINTR`; any other failure throws.
    ///
    /// `MSG_NOSIGNAL` is always added, so a peer that went away is `.brokenPipe`, never a `SIGPIPE`. A send
    /// timeout (`SO_SNDTIMEO`) or `MSG_DONTWAIT` on a full buffer is `.wouldBlock`.
    /// The corresponding C function is `send`.
    package func sendAll(_ buffer: UnsafeRawBufferPointer, flags: Int32 = 0) throws(Errno) {
        let fd = rawValue
        let flags = flags | Int32(MSG_NOSIGNAL)
        try Self.transferAll(buffer) { Glibc.send(fd, $0.baseAddress, $0.count, flags) }
    }

    /// Sends all of `bytes` on a socket; see `sendAll(_:flags:)`.
    package func sendAll(_ bytes: [UInt8], flags: Int32 = 0) throws(Errno) {
        try bytes.withUnsafeBytes { buffer in Result { () throws(Errno) in try sendAll(buffer, flags: flags) } }.get()
    }

    /// The one write-all loop: `step` writes a prefix of what is left and returns its count, or -1 with `errno`.
    private static func transferAll(
        _ buffer: UnsafeRawBufferPointer, _ step: (UnsafeRawBufferPointer) -> Int
    ) throws(Errno) {
        var offset = 0
        while offset < buffer.count {
            let count = step(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
            if count < 0 {
                if errno == EINTR { continue }
                throw Errno.current
            }
            guard count > 0 else { throw Errno.ioError }  // no progress on a non-empty write: never loop forever
            offset += count
        }
    }

    /// Writes all of `bytes` at `offset` in the file, retrying short writes and `EINTR`; the file offset does not
    /// move. Any other failure throws.
    ///
    /// The corresponding C function is `pwrite`.
    package func writeAll(_ bytes: [UInt8], atOffset offset: Int) throws(Errno) {
        let fd = rawValue
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(Errno) in
                try Self.transferAll(buffer) { rest in
                    pwrite(fd, rest.baseAddress, rest.count, off_t(offset + buffer.count - rest.count))
                }
            }
        }.get()
    }

    // MARK: Reading

    /// Reads at most `buffer.count` bytes into `buffer`, retrying `EINTR`; 0 means end of file.
    ///
    /// The corresponding C function is `read`.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        while true {
            let count = Glibc.read(rawValue, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            guard errno == EINTR else { throw Errno.current }
        }
    }

    /// Reads at most `count` bytes (fewer at end of file or when less is available), retrying `EINTR`.
    ///
    /// The corresponding C function is `read`.
    package func read(upTo count: Int) throws(Errno) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(0, count))
        let read = try bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(Errno) in try self.read(into: buffer) }
        }.get()
        bytes.removeSubrange(read...)
        return bytes
    }

    /// Reads one byte, retrying `EINTR`; nil at end of file.
    ///
    /// The corresponding C function is `read`.
    package func readByte() throws(Errno) -> UInt8? {
        var byte: UInt8 = 0
        let count = try withUnsafeMutableBytes(of: &byte) { buffer in
            Result { () throws(Errno) in try self.read(into: buffer) }
        }.get()
        return count == 1 ? byte : nil
    }

    /// Waits until there is something to read (or end of file) for at most `timeoutMilliseconds` (-1: no limit);
    /// false when the time ran out. A signal ends the wait early as `.interrupted`.
    ///
    /// The corresponding C function is `poll`.
    package func waitForInput(timeoutMilliseconds: Int32) throws(Errno) -> Bool {
        var descriptor = pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, timeoutMilliseconds)
        guard ready >= 0 else { throw Errno.current }
        return ready == 1
    }

    /// Reads until end of file; more than `maximumCount` bytes is `.fileTooLarge`.
    ///
    /// The corresponding C function is `read`.
    package func readAll(maximumCount: Int) throws(Errno) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = try chunk.withUnsafeMutableBytes { buffer in
                Result { () throws(Errno) in try self.read(into: buffer) }
            }.get()
            if count == 0 { return bytes }
            guard bytes.count + count <= maximumCount else { throw Errno.fileTooLarge }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    // MARK: Files

    /// Flushes the file's data and metadata to the device.
    ///
    /// The corresponding C function is `fsync`.
    package func fsync() throws(Errno) {
        while Glibc.fsync(rawValue) != 0 {
            guard errno == EINTR else { throw Errno.current }
        }
    }

    /// Flushes the file's data (and the metadata needed to read it back, such as its size) to the device.
    ///
    /// The corresponding C function is `fdatasync`.
    package func dataSync() throws(Errno) {
        while fdatasync(rawValue) != 0 {
            guard errno == EINTR else { throw Errno.current }
        }
    }

    /// Takes the exclusive `flock` lock on the file, waiting while another open file description holds it;
    /// retries `EINTR`. The lock ends when the last descriptor of this open file closes (a crash releases it).
    ///
    /// The corresponding C function is `flock(LOCK_EX)`.
    package func lockExclusively() throws(Errno) {
        while flock(rawValue, LOCK_EX) != 0 {
            guard errno == EINTR else { throw Errno.current }
        }
    }

    /// Takes the exclusive `flock` lock on the file if no one else holds it: false, at once, when someone does.
    ///
    /// The corresponding C function is `flock(LOCK_EX | LOCK_NB)`.
    package func tryLockExclusively() throws(Errno) -> Bool {
        while flock(rawValue, LOCK_EX | LOCK_NB) != 0 {
            if errno == EWOULDBLOCK { return false }
            guard errno == EINTR else { throw Errno.current }
        }
        return true
    }

    /// Makes `target` another descriptor of this open file, closing what `target` was first (as `dup2` does);
    /// `target` is not owned by this value afterwards any more than before.
    ///
    /// The corresponding C function is `dup2`.
    package func duplicate(onto target: Int32) throws(Errno) {
        guard dup2(rawValue, target) != -1 else { throw Errno.current }
    }

    /// Sets the file's permission bits to exactly `mode`.
    ///
    /// The corresponding C function is `fchmod`.
    package func setPermissions(_ mode: mode_t) throws(Errno) {
        guard fchmod(rawValue, mode) == 0 else { throw Errno.current }
    }

    /// Whether the descriptor is a terminal (false for files, pipes and closed descriptors).
    ///
    /// The corresponding C function is `isatty`.
    package var isTerminal: Bool { isatty(rawValue) == 1 }

    /// Whether the descriptor is open in this process (false for a number no file is open on).
    ///
    /// The corresponding C function is `fcntl(F_GETFD)`.
    package var isOpen: Bool { fcntl(rawValue, F_GETFD) != -1 }

}
