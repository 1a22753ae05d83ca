import Testing
import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct UserDatabaseTests {
    /// The effective user's entry as the non-reentrant C functions give it.
    private func ownEntry() throws -> UserAccount {
        let entry = try #require(getpwuid(geteuid()))
        return UserAccount(
            name: String(cString: entry.pointee.pw_name), userID: entry.pointee.pw_uid, groupID: entry.pointee.pw_gid)
    }

    @Test func theEffectiveUserByIDAndByName() throws {
        let own = try ownEntry()
        #expect(try UserDatabase.user(id: own.userID) == own)
        #expect(try UserDatabase.user(named: own.name) == own)
    }

    @Test func rootIsUIDZero() throws {
        #expect(try UserDatabase.user(named: "root")?.userID == 0)
        #expect(try UserDatabase.user(id: 0)?.name == "root")
    }

    @Test func noSuchUserIsNil() throws {
        #expect(try UserDatabase.user(named: "tokenpin-no-such-user") == nil)
        #expect(try UserDatabase.user(named: "") == nil)
        #expect(try UserDatabase.user(id: 3_999_999_999) == nil)
    }

    @Test(arguments: [1, 4]) func anEntryLargerThanTheBufferIsRangeNotATruncatedName(bufferSize: Int) {
        #expect(throws: Errno(rawValue: ERANGE)) { _ = try UserDatabase.user(named: "root", bufferSize: bufferSize) }
        #expect(throws: Errno(rawValue: ERANGE)) { _ = try UserDatabase.user(id: 0, bufferSize: bufferSize) }
    }

    @Test func theDefaultBufferIsFourKiB() {
        #expect(UserDatabase.defaultBufferSize == 4096)
    }
}
