#if canImport(Glibc)
    import Glibc
#endif

/// Replaces a file so that it holds either its old or its new contents, whatever fails or crashes.
package enum AtomicFile {
    /// The steps of a replace, in order; a test hook may fail the replace after any of them.
    enum Step: Sendable, CaseIterable {
        /// The target's directory is open (not a symlink) and the target is not a symlink.
        case directoryOpened
        /// The temporary file exists (created exclusively, not through a symlink).
        case temporaryCreated
        /// The contents are written to the temporary file.
        case written
        /// The temporary file is synced.
        case synced
        /// The temporary file is renamed over the target.
        case renamed
        /// The directory is synced: the replace is durable.
        case directorySynced
    }

    /// The temporary file a replace of `path` writes first: `.<name>.tmp` in the same directory.
    package static func temporaryPath(for path: String) -> String {
        let (directory, name) = split(path)
        return directory + "/." + name + ".tmp"
    }

    /// Replaces the file at `path` with `contents`, atomically and durably; a new file gets `mode`.
    ///
    /// The contents go to a temporary file in the same directory (`O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC`,
    /// a leftover from a crash removed first), are written in full and synced, the temporary file is renamed over
    /// the target and the directory is synced. When this returns, the new contents survive a crash or power loss;
    /// when it throws, at any step, the temporary file is gone and the target holds its old contents (or, when
    /// only the directory sync failed, the new ones, not yet known to be durable). A directory or target that is
    /// a symbolic link is refused with `.tooManySymbolicLinkLevels`. Writers of one file must take turns (the
    /// caller's lock); the temporary name is fixed so that a crash leaves at most one leftover.
    ///
    /// The corresponding C functions are `openat`, `write`, `fsync` and `renameat`.
    package static func replace(path: String, contents: [UInt8], mode: mode_t = 0o600) throws(Errno) {
        try replace(path: path, contents: contents, mode: mode, after: { _ throws(Errno) in })
    }

    /// `replace(path:contents:mode:)` with `hook` called after each step; a hook that throws fails the replace
    /// there, as a failing system call would.
    static func replace(
        path: String, contents: [UInt8], mode: mode_t, after hook: (Step) throws(Errno) -> Void
    ) throws(Errno) {
        let (directoryPath, name) = split(path)
        guard !name.isEmpty, name != ".", name != ".." else { throw Errno.invalidArgument }
        let temporary = "." + name + ".tmp"
        let directory: FileDescriptor
        do {
            directory = try FileDescriptor.open(directoryPath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        } catch {
            // Linux reports a symlinked directory under O_DIRECTORY | O_NOFOLLOW as ENOTDIR.
            var info = stat()
            if error == .notDirectory, lstat(directoryPath, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
                throw Errno.tooManySymbolicLinkLevels
            }
            throw error
        }
        var info = stat()
        if fstatat(directory.rawValue, name, &info, AT_SYMLINK_NOFOLLOW) == 0 {
            guard info.st_mode & S_IFMT != S_IFLNK else { throw Errno.tooManySymbolicLinkLevels }
        } else if errno != ENOENT {
            throw Errno.current
        }
        try hook(.directoryOpened)

        _ = unlinkat(directory.rawValue, temporary, 0)  // a leftover from a crash is never the file
        let file = try FileDescriptor.open(
            temporary, relativeTo: directory,
            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
        do throws(Errno) {
            try hook(.temporaryCreated)
            try file.writeAll(contents)
            try hook(.written)
            try file.fsync()
            try hook(.synced)
            try file.close()
            guard renameat(directory.rawValue, temporary, directory.rawValue, name) == 0 else { throw Errno.current }
        } catch {
            _ = unlinkat(directory.rawValue, temporary, 0)
            throw error
        }
        try hook(.renamed)
        try directory.fsync()
        try hook(.directorySynced)
    }

    /// `path`'s directory (`.` when it has none) and last component.
    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }
}
