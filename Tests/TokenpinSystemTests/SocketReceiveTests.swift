import Testing
import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct SocketReceiveTests {
    /// A connected pair of Unix stream sockets, as raw descriptors for the test to own.
    private func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    @Test func receivesIntoTheCallersBufferThenZeroAtTheEnd() throws {
        let (senderFD, receiverFD) = socketPair()
        let sender = FileDescriptor(owning: senderFD)
        let receiver = FileDescriptor(owning: receiverFD)
        try sender.sendAll(Array("abc".utf8))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 1)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0xEE)
        let count = try receiver.receive(into: buffer)
        #expect(count == 3)
        #expect(Array(buffer) == Array("abc".utf8) + [UInt8](repeating: 0xEE, count: 5), "written in place, no more")
        try sender.close()
        #expect(try receiver.receive(into: buffer) == 0, "the peer closed its end")
    }

    @Test func anEmptyNonBlockingSocketIsWouldBlockNotRetried() throws {
        let (senderFD, receiverFD) = socketPair()
        let sender = FileDescriptor(owning: senderFD)
        let receiver = FileDescriptor(owning: receiverFD)
        #expect(fcntl(receiver.rawValue, F_SETFL, fcntl(receiver.rawValue, F_GETFL) | O_NONBLOCK) == 0)
        var byte: UInt8 = 0
        #expect(throws: Errno.wouldBlock) {
            _ = try withUnsafeMutableBytes(of: &byte) { buffer in
                Result { () throws(Errno) in try receiver.receive(into: buffer) }
            }.get()
        }
        _ = sender
    }

    @Test func shutdownEndsBothDirectionsAndKeepsTheDescriptor() throws {
        let (localFD, peerFD) = socketPair()
        let local = FileDescriptor(owning: localFD)
        let peer = FileDescriptor(owning: peerFD)
        try local.shutdown()
        let stillOpen = local.isOpen
        #expect(stillOpen)
        #expect(try peer.read(upTo: 4) == [], "the peer reads the end")
        #expect(try local.read(upTo: 4) == [], "a read here ends at once")
        #expect(throws: Errno.brokenPipe) { try local.sendAll([1]) }
        #expect(throws: Errno.badFileDescriptor) {
            try FileDescriptor.withBorrowed(-1) { (socket: borrowing FileDescriptor) throws(Errno) in
                try socket.shutdown()
            }
        }
    }
}
