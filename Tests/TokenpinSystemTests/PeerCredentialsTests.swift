import Testing
import TokenpinSystem
import TokenpinTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A connected pair of Unix stream sockets, as raw descriptors for the caller to own.
private func socketPair() -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
    return (fds[0], fds[1])
}

/// A pipe made without `O_CLOEXEC`, as raw descriptors for the caller to own.
private func pipePair() -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    #expect(pipe(&fds) == 0)
    return (fds[0], fds[1])
}

@Suite struct PeerCredentialsTests {
    @Test func aSocketPairsPeerIsThisProcess() throws {
        let (localFD, peerFD) = socketPair()
        let local = FileDescriptor(owning: localFD)
        let peer = FileDescriptor(owning: peerFD)
        let expected = PeerCredentials(processID: getpid(), userID: geteuid(), groupID: getegid())
        #expect(try local.peerCredentials() == expected)
        #expect(try peer.peerCredentials() == expected)
    }

    @Test func anAcceptedConnectionsPeerIsTheConnectingProcess() throws {
        let path = temporaryDirectory() + "/socket"
        let server = try UnixSocket.listen(path: path)
        let client = try UnixSocket.connect(path: path)
        let accepted = try server.accept()
        #expect(try accepted.peerCredentials().processID == getpid())
        #expect(try accepted.peerCredentials().userID == geteuid())
        _ = client
    }

    @Test func aPipeIsNotASocket() throws {
        let (readingFD, writingFD) = pipePair()
        let reading = FileDescriptor(owning: readingFD)
        let writing = FileDescriptor(owning: writingFD)
        #expect(throws: Errno(rawValue: ENOTSOCK)) { _ = try reading.peerCredentials() }
        _ = writing
    }

    @Test func aClosedDescriptorIsBadFileDescriptor() {
        #expect(throws: Errno.badFileDescriptor) {
            _ = try FileDescriptor.withBorrowed(-1) { (socket: borrowing FileDescriptor) throws(Errno) in
                try socket.peerCredentials()
            }
        }
    }
}

@Suite struct AcceptTests {
    @Test func acceptedSocketsAreCloseOnExecAndCarryBytes() throws {
        let path = temporaryDirectory() + "/socket"
        let server = try UnixSocket.listen(path: path)
        let client = try UnixSocket.connect(path: path)
        let accepted = try server.accept()
        #expect(try accepted.isCloseOnExec())
        try client.sendAll(Array("ping\n".utf8))
        #expect(try accepted.read(upTo: 5) == Array("ping\n".utf8))
    }

    @Test func acceptingOnANonListeningSocketIsInvalidArgument() {
        let (localFD, peerFD) = socketPair()
        let local = FileDescriptor(owning: localFD)
        let peer = FileDescriptor(owning: peerFD)
        #expect(throws: Errno.invalidArgument) { _ = try local.accept() }
        _ = peer
    }

    @Test func acceptingWithNobodyWaitingOnANonBlockingSocketIsWouldBlock() throws {
        let server = try UnixSocket.listen(path: temporaryDirectory() + "/socket")
        #expect(fcntl(server.rawValue, F_SETFL, fcntl(server.rawValue, F_GETFL) | O_NONBLOCK) == 0)
        #expect(throws: Errno.wouldBlock) { _ = try server.accept() }
    }
}

@Suite struct CloseOnExecTests {
    @Test func setsTheFlagOnADescriptorWithout() throws {
        let (readingFD, writingFD) = pipePair()
        let reading = FileDescriptor(owning: readingFD)
        let writing = FileDescriptor(owning: writingFD)
        #expect(try reading.isCloseOnExec() == false)
        try reading.setCloseOnExec()
        #expect(try reading.isCloseOnExec())
        #expect(try writing.isCloseOnExec() == false, "only the descriptor named")
    }

    @Test func aClosedDescriptorIsBadFileDescriptor() {
        #expect(throws: Errno.badFileDescriptor) {
            try FileDescriptor.withBorrowed(-1) { (file: borrowing FileDescriptor) throws(Errno) in
                try file.setCloseOnExec()
            }
        }
    }
}

@Suite struct SendWithoutWaitingTests {
    @Test func aFullSocketIsWouldBlockNotAWait() throws {
        let (localFD, peerFD) = socketPair()
        let local = FileDescriptor(owning: localFD)
        let peer = FileDescriptor(owning: peerFD)
        let chunk = [UInt8](repeating: 0x41, count: 65536)
        var sent = 0
        // Fill the buffers: the peer never reads, so a blocking send would hang here.
        while (try? local.sendAllWithoutWaiting(chunk)) != nil {
            sent += 1
            #expect(sent < 1024, "a socket buffer is not 64 MiB")
            if sent >= 1024 { break }
        }
        #expect(throws: Errno.wouldBlock) { try local.sendAllWithoutWaiting([1]) }
        _ = peer
    }

    @Test func aGonePeerIsBrokenPipe() throws {
        let (localFD, peerFD) = socketPair()
        let local = FileDescriptor(owning: localFD)
        let peer = FileDescriptor(owning: peerFD)
        try peer.close()
        #expect(throws: Errno.brokenPipe) { try local.sendAllWithoutWaiting([1]) }
    }

    @Test func bytesArriveWhenThereIsRoom() throws {
        let (localFD, peerFD) = socketPair()
        let local = FileDescriptor(owning: localFD)
        let peer = FileDescriptor(owning: peerFD)
        try local.sendAllWithoutWaiting(Array("event\n".utf8))
        #expect(try peer.read(upTo: 6) == Array("event\n".utf8))
    }
}

@Suite struct SocketEntryTests {
    @Test func aSocketIsOneAndAFileIsNot() throws {
        let directory = temporaryDirectory()
        let socket = try UnixSocket.listen(path: directory + "/socket")
        #expect(try UnixSocket.isSocketEntry(at: directory + "/socket"))
        let file = try FileDescriptor.createNew(directory + "/file", mode: 0o600)
        #expect(try UnixSocket.isSocketEntry(at: directory + "/file") == false)
        #expect(try UnixSocket.isSocketEntry(at: directory) == false, "a directory")
        _ = socket
        _ = file
    }

    @Test func aSymbolicLinkToASocketIsNotOne() throws {
        let directory = temporaryDirectory()
        let socket = try UnixSocket.listen(path: directory + "/socket")
        #expect(symlink(directory + "/socket", directory + "/link") == 0)
        #expect(try UnixSocket.isSocketEntry(at: directory + "/link") == false)
        #expect(symlink(directory + "/nothing", directory + "/dangling") == 0)
        #expect(try UnixSocket.isSocketEntry(at: directory + "/dangling") == false, "the link itself is there")
        _ = socket
    }

    @Test func nothingThereIsNoSuchFile() {
        let directory = temporaryDirectory()
        #expect(throws: Errno.noSuchFileOrDirectory) { _ = try UnixSocket.isSocketEntry(at: directory + "/nothing") }
        #expect(throws: Errno.notDirectory) {
            _ = try UnixSocket.isSocketEntry(at: "/dev/null/socket")
        }
    }
}
