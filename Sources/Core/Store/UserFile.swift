internal import TokenpinSystem

/// One user's file in the store directory, the record (`USER.json`) or the login-keyring file beside it
/// (`USER.login-keyring`): opened, checked, read, replaced and removed here and nowhere else, so that a check made
/// for one file is made for the other.
///
/// Invariant 3: a file is opened without following a symlink (`O_NOFOLLOW`), then refused unless it is a regular
/// file of the store's owner that no one else can read or write (0600) and no larger than its kind allows; one about
/// to be written in place must have no other hard link. A save replaces the file through `AtomicFile` (a temporary
/// file, synced, renamed over it), mode 0600, never through a symlink. The kinds differ only in the wording of
/// some messages, kept as each has always said it. The system calls are TokenpinSystem's (`FileDescriptor`,
/// `FileStatus`, `AtomicFile`, `Paths`).
struct UserFile: Sendable {
    /// Which of a user's files.
    enum Kind: Sendable, CaseIterable {
        /// The enrolment record.
        case record
        /// The login-keyring file (LoginKeyringFile).
        case loginKeyring

        /// What the file name adds to the user's name.
        var suffix: String { self == .record ? ".json" : ".login-keyring" }
        /// What messages call it.
        var name: String { self == .record ? "the record" : "the login-keyring file" }
        /// The largest file accepted; anything bigger is not ours.
        var maximumSize: Int { self == .record ? RecordStore.maximumRecordSize : LoginKeyringFile.maximumLength }
    }

    /// What `fstat` says of an open file, as the checks need it.
    struct Status: Sendable, Equatable {
        /// A regular file (not a directory, device, socket or FIFO).
        var isRegularFile: Bool
        /// The owner's uid.
        var owner: UInt32
        /// The permission bits (`st_mode & 0o777`).
        var permissions: UInt32
        /// The size in bytes.
        var size: Int
        /// The number of hard links.
        var links: Int
    }

    /// Which of the user's files this is.
    let kind: Kind
    /// Its path.
    let path: String
    /// The uid that must own it (the store's owner).
    let owner: UInt32

    /// Opens the file, never through a symlink; nil only when it does not exist. `forUpdate` opens it for
    /// reading and writing (a write in place), else for reading.
    func open(forUpdate: Bool = false) throws(StoreError) -> FileDescriptor? {
        do {
            return try FileDescriptor.open(path, Self.openFlags(forUpdate: forUpdate))
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            if error == .tooManySymbolicLinkLevels {
                throw StoreError(
                    .insecure, path: path, kind == .record ? "the record is a symlink" : "the file is a symlink")
            }
            throw StoreError(system: error, path: path, "cannot open \(kind.name)")
        }
    }

    /// Opens, checks and reads the file whole; nil only when it does not exist.
    func read() throws(StoreError) -> [UInt8]? {
        guard let file = try open() else { return nil }
        return try checkedContents(of: file)
    }

    /// Checks the open file (kind, owner, mode; `inPlace`: no other hard link, as a write in place would change
    /// them too; size) and reads it whole.
    func checkedContents(of file: borrowing FileDescriptor, inPlace: Bool = false) throws(StoreError) -> [UInt8] {
        let status: Status
        do {
            status = Status(try FileStatus.of(file))
        } catch {
            throw StoreError(system: error, path: path, "cannot inspect \(kind.name)")
        }
        try check(status)
        guard !inPlace || status.links == 1 else {
            throw StoreError(.insecure, path: path, "\(kind.name) has other hard links; it is written in place")
        }
        guard status.size <= kind.maximumSize else { throw tooLarge(size: status.size) }
        do {
            return try file.readAll(maximumCount: kind.maximumSize)
        } catch {
            if error == .fileTooLarge { throw tooLarge(size: nil) }  // it grew since fstat
            throw StoreError(system: error, path: path, "cannot read \(kind.name)")
        }
    }

    /// Refuses a file that is not a regular file of the owner, mode 0600 or stricter.
    func check(_ status: Status) throws(StoreError) {
        guard status.isRegularFile else {
            throw StoreError(.insecure, path: path, "\(kind.name) is not a regular file")
        }
        guard status.owner == owner else {
            throw StoreError(.insecure, path: path, "\(kind.name) belongs to uid \(status.owner), not \(owner)")
        }
        // 0600 only: a record others can read hands them the salted, wrapped keys an offline guess starts from,
        // and a login-keyring file the sealed login password.
        guard status.permissions & 0o077 == 0 else {
            let mode = String(status.permissions, radix: 8)
            guard kind == .record else {
                throw StoreError(.insecure, path: path, "others can read or write \(kind.name) (mode \(mode))")
            }
            let verb = status.permissions & 0o022 != 0 ? "write" : "read"
            throw StoreError(.insecure, path: path, "others can \(verb) the record (mode \(mode); a record is 0600)")
        }
    }

    private func tooLarge(size: Int?) -> StoreError {
        guard kind == .record else {
            return StoreError(.corrupt, path: path, "the login-keyring file is too large to be one")
        }
        let detail = size.map { "the record is \($0) bytes, too large to be a tokenpin record" }
        return StoreError(.corrupt, path: path, detail ?? "the record is too large to be a tokenpin record")
    }

    /// Replaces the file with `contents` atomically and durably (`AtomicFile.replace`), mode 0600; a symlinked
    /// file or directory is refused.
    func replace(with contents: [UInt8]) throws(StoreError) {
        do {
            try AtomicFile.replace(path: path, contents: contents, mode: 0o600)
        } catch {
            throw StoreError(system: error, path: path, "cannot save \(kind.name)")
        }
    }

    /// Deletes the file, if any (a symlink in its place is removed, not followed).
    func remove() throws(StoreError) {
        do {
            try Paths.removeFile(path)
        } catch {
            if error == .noSuchFileOrDirectory { return }
            throw StoreError(
                system: error, path: path, kind == .record ? "cannot remove the record" : "cannot remove the file")
        }
    }
}

extension RecordStore {
    /// `user`'s file of `kind`; a user name that cannot name a file is refused.
    func userFile(_ kind: UserFile.Kind, user: String) throws(StoreError) -> UserFile {
        guard Self.validate(user: user) else { throw StoreError(.invalidUser, path: directory, "invalid user name") }
        return UserFile(kind: kind, path: path(of: kind, user: user), owner: owner)
    }

    /// The path of `user`'s file of `kind`.
    func path(of kind: UserFile.Kind, user: String) -> String { directory + "/" + user + kind.suffix }
}

extension StoreError {
    /// The error of a system call on `path` that failed with `error` while doing `what`: `.permissionDenied`,
    /// `.insecure` for a symlink in the way, else `.io`.
    init(system error: Errno, path: String, _ what: String) {
        if error == .permissionDenied || error == .notPermitted {
            self.init(.permissionDenied, path: path, "\(what): \(error)")
        } else if error == .tooManySymbolicLinkLevels {
            self.init(.insecure, path: path, "\(what): a symlink is in the way")
        } else {
            self.init(.io, path: path, "\(what): \(error)")
        }
    }
}
