import FoundationEssentials

// The login keyring's file beside each record (`USER.login-keyring`, LoginKeyringFile): opened, checked, read and
// written by the record's own rules (UserFile: 0600, the store's owner, no symlink, atomic replace), under the
// caller's lock of the user.

extension RecordStore {
    /// The login-keyring file of `user`.
    public func loginKeyringPath(for user: String) -> String { path(of: .loginKeyring, user: user) }

    /// Reads `user`'s login-keyring file; nil only when it does not exist.
    ///
    /// A file that is not a regular file of the store's owner, others can read, is too large, or does not parse
    /// (truncated, damaged, another version) throws `.insecure` or `.corrupt` naming the file and what is wrong.
    public func loadLoginKeyring(user: String) throws(StoreError) -> LoginKeyringFile? {
        let file = try userFile(.loginKeyring, user: user)
        guard let bytes = try file.read() else { return nil }
        do {
            return try LoginKeyringFile.parse(bytes)
        } catch {
            throw StoreError(.corrupt, path: file.path, "the login-keyring file is damaged: \(error.detail)")
        }
    }

    /// Replaces `user`'s login-keyring file atomically (0600).
    public func saveLoginKeyring(_ contents: LoginKeyringFile, user: String) throws(StoreError) {
        try userFile(.loginKeyring, user: user).replace(with: contents.encoded)
    }

    /// Deletes `user`'s login-keyring file, if any.
    public func removeLoginKeyring(user: String) throws(StoreError) {
        try userFile(.loginKeyring, user: user).remove()
    }
}
