#if canImport(Glibc)
    import Glibc
#endif

/// An entry of the password database: a login name and its IDs.
package struct UserAccount: Sendable, Equatable {
    /// The login name.
    package let name: String
    /// The user ID.
    package let userID: UInt32
    /// The primary group ID.
    package let groupID: UInt32

    /// An entry with these fields.
    package init(name: String, userID: UInt32, groupID: UInt32) {
        self.name = name
        self.userID = userID
        self.groupID = groupID
    }
}

/// Look-ups in the password database (`/etc/passwd`, or whatever NSS is configured to ask).
package enum UserDatabase {
    /// The buffer the reentrant look-ups get for the entry's strings unless a caller asks for another size.
    package static let defaultBufferSize = 4096

    /// The entry of the login name `name`, or nil when the database has none (an entry without a name counts as none).
    ///
    /// An entry whose strings do not fit in `bufferSize` bytes is `ERANGE`; it is not retried with a larger buffer.
    /// The corresponding C function is `getpwnam_r`.
    package static func user(named name: String, bufferSize: Int = defaultBufferSize) throws(Errno) -> UserAccount? {
        try lookUp(bufferSize: bufferSize) { getpwnam_r(name, &$0, &$1, $1.count, &$2) }
    }

    /// The entry of the user ID `id`, or nil when the database has none (an entry without a name counts as none).
    ///
    /// An entry whose strings do not fit in `bufferSize` bytes is `ERANGE`; it is not retried with a larger buffer.
    /// The corresponding C function is `getpwuid_r`.
    package static func user(id: UInt32, bufferSize: Int = defaultBufferSize) throws(Errno) -> UserAccount? {
        try lookUp(bufferSize: bufferSize) { getpwuid_r(id, &$0, &$1, $1.count, &$2) }
    }

    /// The one reentrant look-up: `call` fills the entry from the buffer and sets the result pointer, returning 0 or
    /// an error number (not `errno`); a zero return with no result is "no such entry".
    private static func lookUp(
        bufferSize: Int, _ call: (inout passwd, inout [CChar], inout UnsafeMutablePointer<passwd>?) -> Int32
    ) throws(Errno) -> UserAccount? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: max(1, bufferSize))
        let status = call(&entry, &buffer, &result)
        guard status == 0 else { throw Errno(rawValue: status) }
        guard result != nil, let name = entry.pw_name else { return nil }
        return UserAccount(name: String(cString: name), userID: entry.pw_uid, groupID: entry.pw_gid)
    }
}
