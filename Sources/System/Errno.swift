#if canImport(Glibc)
    import Glibc
#endif

/// An error number reported by a system call, like swift-system's `Errno`.
///
/// Compare errors by value (`error == .fileExists`); the description is the C library's message.
package struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    /// The C `errno` value.
    package let rawValue: Int32

    /// Wraps a C `errno` value.
    package init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno` now.
    package static var current: Errno { Errno(rawValue: errno) }

    /// The message the C library gives for this error.
    ///
    /// The corresponding C function is `strerror`.
    package var description: String { String(cString: strerror(rawValue)) }

    /// `EPERM`: the operation is not permitted.
    package static let notPermitted = Errno(rawValue: EPERM)
    /// `ENOENT`: no such file or directory.
    package static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// `EINTR`: a signal interrupted the call.
    package static let interrupted = Errno(rawValue: EINTR)
    /// `EIO`: an input/output error.
    package static let ioError = Errno(rawValue: EIO)
    /// `EBADF`: not an open descriptor.
    package static let badFileDescriptor = Errno(rawValue: EBADF)
    /// `EAGAIN` (`EWOULDBLOCK`): the call would block, or a socket timeout expired.
    package static let wouldBlock = Errno(rawValue: EAGAIN)
    /// `EACCES`: permission denied.
    package static let permissionDenied = Errno(rawValue: EACCES)
    /// `EEXIST`: the file exists.
    package static let fileExists = Errno(rawValue: EEXIST)
    /// `ENOTDIR`: a path component is not a directory.
    package static let notDirectory = Errno(rawValue: ENOTDIR)
    /// `EISDIR`: the path is a directory.
    package static let isDirectory = Errno(rawValue: EISDIR)
    /// `EINVAL`: an invalid argument.
    package static let invalidArgument = Errno(rawValue: EINVAL)
    /// `EFBIG`: the file is larger than the caller accepts.
    package static let fileTooLarge = Errno(rawValue: EFBIG)
    /// `ENOSPC`: no space left on the device.
    package static let noSpace = Errno(rawValue: ENOSPC)
    /// `EPIPE`: the peer closed its end.
    package static let brokenPipe = Errno(rawValue: EPIPE)
    /// `ENAMETOOLONG`: a path is too long (for a Unix socket: longer than `sun_path`).
    package static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
    /// `ELOOP`: a symbolic link is in the way (`O_NOFOLLOW`), or too many levels of them.
    package static let tooManySymbolicLinkLevels = Errno(rawValue: ELOOP)
    /// `ECONNREFUSED`: nothing listens at the address.
    package static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    /// `ECONNRESET`: the peer reset the connection.
    package static let connectionReset = Errno(rawValue: ECONNRESET)
    /// `EHOSTUNREACH`: no route to the host (for a TCP connection: a name that resolves to no address too).
    package static let hostUnreachable = Errno(rawValue: EHOSTUNREACH)
    /// `ENOTSOCK`: the descriptor is not a socket.
    package static let notSocket = Errno(rawValue: ENOTSOCK)
}
