import FoundationEssentials
internal import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

// The login keyring's file beside each record (`USER.login-keyring`, LoginKeyringFile): read and written with the
// record's own rules (0600, the store's owner, no symlink, atomic replace), under the caller's lock of the user.

extension RecordStore {
    /// The login-keyring file of `user`.
    public func loginKeyringPath(for user: String) -> String { directory + "/" + user + ".login-keyring" }

    /// Reads `user`'s login-keyring file; nil only when it does not exist.
    ///
    /// A file that is not a regular file of the store's owner, others can read, is too large, or does not parse
    /// (truncated, damaged, another version) throws `.insecure` or `.corrupt` naming the file and what is wrong.
    public func loadLoginKeyring(user: String) throws(StoreError) -> LoginKeyringFile? {
        guard Self.validate(user: user) else { throw StoreError(.invalidUser, path: directory, "invalid user name") }
        let path = loginKeyringPath(for: user)
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW)
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            if error == .tooManySymbolicLinkLevels { throw StoreError(.insecure, path: path, "the file is a symlink") }
            throw storeError(error, path, "cannot open the login-keyring file")
        }
        let info: stat
        do {
            info = try file.status()
        } catch {
            throw storeError(error, path, "cannot inspect the login-keyring file")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StoreError(.insecure, path: path, "the login-keyring file is not a regular file")
        }
        guard info.st_uid == owner else {
            throw StoreError(
                .insecure, path: path, "the login-keyring file belongs to uid \(info.st_uid), not \(owner)")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw StoreError(
                .insecure, path: path,
                "others can read or write the login-keyring file (mode \(String(info.st_mode & 0o777, radix: 8)))")
        }
        let bytes: [UInt8]
        do {
            bytes = try file.readAll(maximumCount: LoginKeyringFile.maximumLength)
        } catch {
            if error == .fileTooLarge {
                throw StoreError(.corrupt, path: path, "the login-keyring file is too large to be one")
            }
            throw storeError(error, path, "cannot read the login-keyring file")
        }
        do {
            return try LoginKeyringFile.parse(bytes)
        } catch {
            throw StoreError(.corrupt, path: path, "the login-keyring file is damaged: \(error.detail)")
        }
    }

    /// Replaces `user`'s login-keyring file atomically (0600).
    public func saveLoginKeyring(_ contents: LoginKeyringFile, user: String) throws(StoreError) {
        guard Self.validate(user: user) else { throw StoreError(.invalidUser, path: directory, "invalid user name") }
        let path = loginKeyringPath(for: user)
        do {
            try AtomicFile.replace(path: path, contents: contents.encoded, mode: 0o600)
        } catch {
            throw storeError(error, path, "cannot save the login-keyring file")
        }
    }

    /// Deletes `user`'s login-keyring file, if any.
    public func removeLoginKeyring(user: String) throws(StoreError) {
        guard Self.validate(user: user) else { throw StoreError(.invalidUser, path: directory, "invalid user name") }
        let path = loginKeyringPath(for: user)
        guard unlink(path) == 0 || errno == ENOENT else { throw systemError(path, "cannot remove the file") }
    }
}
