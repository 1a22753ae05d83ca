#if canImport(Glibc)
    import Glibc
#endif

/// What `stat` says about a file that tokenpin checks before it trusts it (a program it runs, say): its kind, its
/// owner and who may change it.
package struct FileStatus: Sendable, Equatable {
    /// A regular file (not a directory, device, socket or FIFO).
    package let isRegularFile: Bool
    /// The owner's uid.
    package let owner: UInt32
    /// Writable by its group or by others (`S_IWGRP`, `S_IWOTH`).
    package let isWritableByGroupOrOthers: Bool
    /// The sticky bit (`S_ISVTX`): in a directory, only a file's owner may rename or remove it.
    package let isSticky: Bool

    /// The status of `path`, following symbolic links.
    ///
    /// The corresponding C function is `stat`.
    package static func of(_ path: String) throws(Errno) -> FileStatus {
        var info = stat()
        guard stat(path, &info) == 0 else { throw Errno.current }
        return FileStatus(info)
    }

    /// The status of the open file `descriptor`.
    ///
    /// The corresponding C function is `fstat`.
    package static func of(_ descriptor: borrowing FileDescriptor) throws(Errno) -> FileStatus {
        var info = stat()
        guard fstat(descriptor.rawValue, &info) == 0 else { throw Errno.current }
        return FileStatus(info)
    }

    private init(_ info: stat) {
        isRegularFile = info.st_mode & S_IFMT == S_IFREG
        owner = info.st_uid
        isWritableByGroupOrOthers = info.st_mode & (S_IWGRP | S_IWOTH) != 0
        isSticky = info.st_mode & S_ISVTX != 0
    }
}

extension Paths {
    /// Whether `path` itself is a Unix socket: a symbolic link to one is not, nor is a missing path.
    ///
    /// The corresponding C function is `lstat`.
    package static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
    }

    /// Whether something of any kind exists at `path`, following symbolic links (a dangling link is nothing).
    ///
    /// The corresponding C function is `stat`.
    package static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }
}

extension CurrentProcess {
    /// Whether this process may execute `path` (with its real uid, as `access` checks).
    ///
    /// The corresponding C function is `access(X_OK)`.
    package static func mayExecute(_ path: String) -> Bool { access(path, X_OK) == 0 }
}
