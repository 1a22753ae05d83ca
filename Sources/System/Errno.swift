#if canImport(Glibc)
    import Glibc
#endif

/// An error number reported by a system call, like swift-system's `Errno`.
///
/// Compare errors by value (`error == .fileExists`); the description is the C library's message.
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    /// The C `errno` value.
    public let rawValue: Int32

    /// Wraps a C `errno` value.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno` now.
    public static var current: Errno { Errno(rawValue: errno) }

    /// The message the C library gives for this error.
    ///
    /// The corresponding C function is `strerror`.
    public var description: String { String(cString: strerror(rawValue)) }

    /// `EPERM`: the operation is not permitted.
    public static let notPermitted = Errno(rawValue: EPERM)
    /// `ENOENT`: no such file or directory.
    public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// `EINTR`: a signal interrupted the call.
    public static let interrupted = Errno(rawValue: EINTR)
    /// `EIO`: an input/output error.
    public static let ioError = Errno(rawValue: EIO)
    /// `EBADF`: not an open descriptor.
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    /// `EAGAIN` (`EWOULDBLOCK`): the call would block, or a socket timeout expired.
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    /// `EACCES`: permission denied.
    public static let permissionDenied = Errno(rawValue: EACCES)
    /// `EEXIST`: the file exists.
    public static let fileExists = Errno(rawValue: EEXIST)
    /// `ENOTDIR`: a path component is not a directory.
    public static let notDirectory = Errno(rawValue: ENOTDIR)
    /// `EISDIR`: the path is a directory.
    public static let isDirectory = Errno(rawValue: EISDIR)
    /// `EINVAL`: an invalid argument.
    public static let invalidArgument = Errno(rawValue: EINVAL)
    /// `EFBIG`: the file is larger than the caller accepts.
    public static let fileTooLarge = Errno(rawValue: EFBIG)
    /// `ENOSPC`: no space left on the device.
    public static let noSpace = Errno(rawValue: ENOSPC)
    /// `EPIPE`: the peer closed its end.
    public static let brokenPipe = Errno(rawValue: EPIPE)
    /// `ENAMETOOLONG`: a path is too long (for a Unix socket: longer than `sun_path`).
    public static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
    /// `ELOOP`: a symbolic link is in the way (`O_NOFOLLOW`), or too many levels of them.
    public static let tooManySymbolicLinkLevels = Errno(rawValue: ELOOP)
    /// `ECONNREFUSED`: nothing listens at the address.
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    /// `ECONNRESET`: the peer reset the connection.
    public static let connectionReset = Errno(rawValue: ECONNRESET)
}
