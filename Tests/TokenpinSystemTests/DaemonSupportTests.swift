import Testing
import TokenpinSystem
import TokenpinTestSupport

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct JournalStreamTests {
    /// `DEVICE:INODE` of `descriptor`, as systemd writes it into `JOURNAL_STREAM`.
    private func stream(of descriptor: Int32) -> String {
        var info = stat()
        #expect(fstat(descriptor, &info) == 0)
        return "\(info.st_dev):\(info.st_ino)"
    }

    @Test func theDescriptorsOwnDeviceAndInodeMatch() throws {
        let file = try FileDescriptor.createNew(temporaryDirectory() + "/stderr", mode: 0o600)
        #expect(JournalStream.isConnected(to: file.rawValue, journalStream: stream(of: file.rawValue)))
    }

    @Test func anotherStreamOrNoneDoesNot() throws {
        let directory = temporaryDirectory()
        let file = try FileDescriptor.createNew(directory + "/stderr", mode: 0o600)
        let other = try FileDescriptor.createNew(directory + "/other", mode: 0o600)
        #expect(!JournalStream.isConnected(to: file.rawValue, journalStream: stream(of: other.rawValue)))
        #expect(!JournalStream.isConnected(to: file.rawValue, journalStream: nil))
        #expect(!JournalStream.isConnected(to: file.rawValue, journalStream: ""))
        #expect(!JournalStream.isConnected(to: file.rawValue, journalStream: stream(of: file.rawValue) + "0"))
        #expect(!JournalStream.isConnected(to: -1, journalStream: stream(of: file.rawValue)), "a closed descriptor")
    }
}

@Suite struct ProcessEnvironmentTests {
    @Test func theIDIsGetpid() {
        #expect(CurrentProcess.id == getpid())
    }

    @Test func removesOneVariableAndAMissingOneIsNoError() throws {
        let name = "TOKENPIN_REMOVE_TEST_\(getpid())"
        #expect(setenv(name, "1", 1) == 0)
        try CurrentProcess.removeEnvironmentValue(name)
        #expect(getenv(name) == nil)
        try CurrentProcess.removeEnvironmentValue(name)
        #expect(throws: Errno.invalidArgument) { try CurrentProcess.removeEnvironmentValue("") }
        #expect(throws: Errno.invalidArgument) { try CurrentProcess.removeEnvironmentValue("A=B") }
    }
}

@Suite struct MallocatedStringsTests {
    /// A C array of C strings allocated with `malloc`, as sd-login returns them.
    private func mallocated(_ strings: [String?]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> {
        let array = malloc(MemoryLayout<UnsafeMutablePointer<CChar>?>.stride * (strings.count + 1))!
            .bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: strings.count + 1)
        for (index, string) in strings.enumerated() { array[index] = string.flatMap { strdup($0) } }
        array[strings.count] = nil
        return array
    }

    @Test func copiesEachStringInOrderAndSkipsNulls() {
        #expect([String](takingMallocated: mallocated(["seat0", nil, "seat1"]), count: 3) == ["seat0", "seat1"])
    }

    @Test func aNullArrayOrACountBelowOneIsEmpty() {
        #expect([String](takingMallocated: nil, count: 3) == [])
        #expect([String](takingMallocated: mallocated([]), count: 0) == [])
        #expect([String](takingMallocated: mallocated([]), count: -2) == [], "an error count from sd_get_seats")
    }
}
