import Testing
import TokenpinSystem
import TokenpinTestSupport

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct DescriptorStatusTests {
    @Test func statusOfAnOpenFileIsThatOfItsPath() throws {
        let specimens = try Specimens()
        defer { specimens.close() }
        let file = try FileDescriptor.open(specimens.file, O_RDONLY)
        let status = try FileStatus.of(file)
        #expect(status.isRegularFile)
        #expect(status.owner == geteuid())
        #expect(!status.isWritableByGroupOrOthers)
        #expect(status == (try FileStatus.of(specimens.file)))
    }

    @Test func aPipeAndASocketAreNotRegularFiles() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        let reader = FileDescriptor(owning: fds[0])
        _ = FileDescriptor(owning: fds[1])
        #expect(try !FileStatus.of(reader).isRegularFile)
        let socket = try FileDescriptor.unixStreamSocket()
        #expect(try !FileStatus.of(socket).isRegularFile)
    }

    @Test func statusOfAClosedDescriptorIsBadFileDescriptor() {
        #expect(throws: Errno.badFileDescriptor) {
            try FileDescriptor.withBorrowed(-1) { (file: borrowing FileDescriptor) throws(Errno) in
                _ = try FileStatus.of(file)
            }
        }
    }

    @Test func openForReadingReadsAndRefusesWrites() throws {
        let specimens = try Specimens()
        defer { specimens.close() }
        let file = try FileDescriptor.openForReading(specimens.file)
        #expect(fcntl(file.rawValue, F_GETFD) & FD_CLOEXEC != 0, "close-on-exec")
        #expect(try file.readAll(maximumCount: 100) == Array("contents\n".utf8))
        #expect(throws: Errno.badFileDescriptor) { try file.writeAll([1]) }
        #expect(throws: Errno.noSuchFileOrDirectory) { _ = try FileDescriptor.openForReading(specimens.missing) }
    }

    @Test func isOpenOnlyWhileOpen() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        let reader = FileDescriptor(owning: fds[0])
        let writer = FileDescriptor(owning: fds[1])
        let readerIsOpen = reader.isOpen
        #expect(readerIsOpen)
        let raw = fds[1]
        #expect(FileDescriptor.withBorrowed(raw) { $0.isOpen })
        try writer.close()
        #expect(!FileDescriptor.withBorrowed(raw) { $0.isOpen }, "closed")
        #expect(!FileDescriptor.withBorrowed(-1) { $0.isOpen })
    }
}
