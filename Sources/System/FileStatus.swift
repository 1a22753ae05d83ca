#if canImport(Glibc)
    import Glibc
#endif

/// What `stat` says about a file that tokenpin checks before it trusts it (a program it runs, a record, a socket):
/// its kind, its owner, its mode, size and links.
package struct FileStatus: Sendable, Equatable {
    /// A regular file (not a directory, device, socket or FIFO).
    package let isRegularFile: Bool
    /// A directory.
    package let isDirectory: Bool
    /// A Unix socket.
    package let isSocket: Bool
    /// A symbolic link (only `ofLink(_:)` can say so: the other lookups follow links).
    package let isSymbolicLink: Bool
    /// The owner's uid.
    package let owner: UInt32
    /// Writable by its group or by others (`S_IWGRP`, `S_IWOTH`).
    package let isWritableByGroupOrOthers: Bool
    /// The sticky bit (`S_ISVTX`): in a directory, only a file's owner may rename or remove it.
    package let isSticky: Bool
    /// The permission bits with set-user-ID, set-group-ID and sticky (`st_mode & 0o7777`).
    package let permissions: UInt32
    /// The size in bytes.
    package let size: Int
    /// The number of hard links.
    package let links: Int

    /// The status of `path`, following symbolic links.
    ///
    /// The corresponding C function is `stat`.
    package static func of(_ path: String) throws(Errno) -> FileStatus {
        var info = stat()
        guard stat(path, &info) == 0 else { throw Errno.current }
        return FileStatus(info)
    }

    /// The status of `path` itself: a symbolic link there is reported as one, not followed.
    ///
    /// The corresponding C function is `lstat`.
    package static func ofLink(_ path: String) throws(Errno) -> FileStatus {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw Errno.current }
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

    /// What `info` says.
    init(_ info: stat) {
        let type = info.st_mode & S_IFMT
        isRegularFile = type == S_IFREG
        isDirectory = type == S_IFDIR
        isSocket = type == S_IFSOCK
        isSymbolicLink = type == S_IFLNK
        owner = info.st_uid
        isWritableByGroupOrOthers = info.st_mode & (S_IWGRP | S_IWOTH) != 0
        isSticky = info.st_mode & S_ISVTX != 0
        permissions = info.st_mode & 0o7777
        size = Int(info.st_size)
        links = Int(info.st_nlink)
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
