import Testing
import TokenpinSystem
import TokenpinTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The wrappers the record store, the configuration and the doctor reach files through: `lstat`, `mkdir`, `open`
/// with named options, `pwrite`, `fdatasync`, `flock`, `dup2` and `SO_PEERCRED`.
@Suite struct FileWrapperTests {
    @Test func ofLinkReportsTheLinkAndOfFollowsIt() throws {
        let specimens = try Specimens()
        defer { specimens.close() }
        let link = try FileStatus.ofLink(specimens.linkToFile)
        #expect(link.isSymbolicLink)
        #expect(!link.isRegularFile)
        let file = try FileStatus.of(specimens.linkToFile)
        #expect(file.isRegularFile && !file.isSymbolicLink && !file.isDirectory && !file.isSocket)
        #expect(file.permissions == 0o600)
        #expect(file.size == 9, "\"contents\\n\"")
        #expect(file.links == 1)
        #expect(file == (try FileStatus.ofLink(specimens.file)))
        #expect(try FileStatus.of(specimens.linkToSocket).isSocket)
        #expect(try !FileStatus.ofLink(specimens.linkToSocket).isSocket)
        #expect(try FileStatus.ofLink(specimens.directory).isDirectory)
        #expect(throws: Errno.noSuchFileOrDirectory) { _ = try FileStatus.ofLink(specimens.missing) }
        #expect(throws: Errno.noSuchFileOrDirectory) { _ = try FileStatus.of(specimens.danglingLink) }
        #expect(try FileStatus.ofLink(specimens.danglingLink).isSymbolicLink)
    }

    @Test func permissionsKeepTheSpecialBitsAndLinksCountHardLinks() throws {
        let specimens = try Specimens()
        defer { specimens.close() }
        #expect(chmod(specimens.file, 0o4751) == 0)
        #expect(link(specimens.file, specimens.directory + "/hard") == 0)
        let status = try FileStatus.of(specimens.file)
        #expect(status.permissions == 0o4751)
        #expect(status.links == 2)
        #expect(status.isWritableByGroupOrOthers == false)
    }

    @Test func makeDirectoryCreatesOnceWithItsMode() throws {
        let base = temporaryDirectory()
        let path = base + "/made"
        try Paths.makeDirectory(path, mode: 0o700)
        let status = try FileStatus.ofLink(path)
        #expect(status.isDirectory && status.permissions == 0o700 && status.owner == geteuid())
        #expect(throws: Errno.fileExists) { try Paths.makeDirectory(path, mode: 0o700) }
        #expect(throws: Errno.noSuchFileOrDirectory) { try Paths.makeDirectory(base + "/none/made", mode: 0o700) }
    }

    @Test func openWithNamedOptions() throws {
        let specimens = try Specimens()
        defer { specimens.close() }
        let created = specimens.directory + "/created"
        let file = try FileDescriptor.open(created, .readWrite, options: [.create, .noFollow], permissions: 0o600)
        #expect(fcntl(file.rawValue, F_GETFD) & FD_CLOEXEC != 0, "close-on-exec")
        #expect(fcntl(file.rawValue, F_GETFL) & O_ACCMODE == O_RDWR)
        #expect(try FileStatus.of(file).permissions == 0o600)
        #expect(throws: Errno.fileExists) {
            _ = try FileDescriptor.open(created, .writeOnly, options: [.create, .exclusiveCreate])
        }
        #expect(throws: Errno.tooManySymbolicLinkLevels) {
            _ = try FileDescriptor.open(specimens.linkToFile, .readOnly, options: .noFollow)
        }
        #expect(throws: Errno.notDirectory) {
            _ = try FileDescriptor.open(specimens.file, .readOnly, options: .directory)
        }
        let directory = try FileDescriptor.open(specimens.directory, .readOnly, options: .directory)
        #expect(try FileStatus.of(directory).isDirectory)
        let nonBlocking = try FileDescriptor.open(specimens.file, .readOnly, options: [.nonBlocking])
        #expect(fcntl(nonBlocking.rawValue, F_GETFL) & O_NONBLOCK != 0)
        #expect(FileDescriptor.OpenOptions([.noFollow, .nonBlocking]).rawValue == O_NOFOLLOW | O_NONBLOCK)
        #expect(FileDescriptor.AccessMode.readOnly.rawValue == O_RDONLY)
    }

    @Test func writeAllAtOffsetWritesThereAndLeavesTheOffset() throws {
        let specimens = try Specimens()
        defer { specimens.close() }
        let file = try FileDescriptor.open(specimens.file, .readWrite)
        try file.writeAll(Array("XY".utf8), atOffset: 3)
        try file.writeAll(Array("!".utf8), atOffset: 10)
        #expect(try file.readAll(maximumCount: 100) == Array("conXYnts\n\0!".utf8), "read from offset 0")
        try file.dataSync()
        #expect(throws: Errno.badFileDescriptor) {
            try FileDescriptor.withBorrowed(-1) { (file: borrowing FileDescriptor) throws(Errno) in
                try file.writeAll([1], atOffset: 0)
            }
        }
        #expect(throws: Errno.badFileDescriptor) {
            try FileDescriptor.withBorrowed(-1) { (file: borrowing FileDescriptor) throws(Errno) in try file.dataSync()
            }
        }
    }

    @Test func anExclusiveLockIsHeldUntilItsFileCloses() throws {
        let path = temporaryDirectory() + "/lock"
        let first = try FileDescriptor.open(path, .readWrite, options: .create, permissions: 0o600)
        let second = try FileDescriptor.open(path, .readWrite)
        try first.lockExclusively()
        #expect(try !second.tryLockExclusively(), "another open file holds it")
        #expect(try first.tryLockExclusively(), "its holder takes it again")
        try first.close()
        #expect(try second.tryLockExclusively())
        try second.lockExclusively()
        #expect(throws: Errno.badFileDescriptor) {
            try FileDescriptor.withBorrowed(-1) { (file: borrowing FileDescriptor) throws(Errno) in
                try file.lockExclusively()
            }
        }
        #expect(throws: Errno.badFileDescriptor) {
            try FileDescriptor.withBorrowed(-1) { (file: borrowing FileDescriptor) throws(Errno) in
                _ = try file.tryLockExclusively()
            }
        }
    }

    @Test func duplicateOntoMakesTheTargetTheSameFile() throws {
        let pipe = try PipeEnds.make()
        let target = try FileDescriptor.open("/dev/null", .writeOnly)
        try pipe.writeEnd.duplicate(onto: target.rawValue)
        try target.writeAll(Array("via the target".utf8))
        #expect(try pipe.readEnd.read(upTo: 100) == Array("via the target".utf8))
        #expect(throws: Errno.badFileDescriptor) { try pipe.writeEnd.duplicate(onto: -1) }
    }

    @Test func peerCredentialsAreThisProcessAcrossAPair() throws {
        let pair = try SocketPair.stream()
        let expected = PeerCredentials(processID: getpid(), userID: geteuid(), groupID: getegid())
        #expect(try pair.first.peerCredentials() == expected)
        #expect(try pair.second.peerCredentials() == expected)
        let specimens = try Specimens()
        defer { specimens.close() }
        let file = try FileDescriptor.openForReading(specimens.file)
        #expect(throws: Errno.notSocket) { _ = try file.peerCredentials() }
    }
}
