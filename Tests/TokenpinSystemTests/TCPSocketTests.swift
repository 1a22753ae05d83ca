import Testing
import TokenpinSystem
import TokenpinTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP listener on 127.0.0.1 at a port the kernel picks, for the client wrappers to connect to.
private struct LoopbackListener: ~Copyable {
    let socket: FileDescriptor
    let port: UInt16

    init() throws {
        socket = FileDescriptor(owning: Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = socket.rawValue
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(fd, generic, length) == 0 && listen(fd, 4) == 0 && getsockname(fd, generic, &length) == 0
            }
        }
        #expect(bound)
        port = UInt16(bigEndian: address.sin_port)
    }

    func accept() -> FileDescriptor { FileDescriptor(owning: Glibc.accept(socket.rawValue, nil, nil)) }
}

@Suite struct TCPSocketTests {
    @Test func aNumericHostResolvesToItsOneStreamAddress() throws {
        let addresses = try TCPAddress.lookUp(host: "127.0.0.1", port: 35963)
        #expect(addresses.map(\.family) == [AF_INET])
    }

    @Test func aLookupErrorSaysWhatTheResolverSays() {
        #expect(AddressLookupError.unknownName.code == EAI_NONAME)
        #expect(AddressLookupError.unknownName.description == "Name or service not known")
    }

    @Test func connectsWithNoDelayAndCarriesBytesBothWays() throws {
        let listener = try LoopbackListener()
        let client = try FileDescriptor.tcpConnection(host: "127.0.0.1", port: listener.port)
        let server = listener.accept()
        var noDelay: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        #expect(getsockopt(client.rawValue, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, &size) == 0)
        #expect(noDelay == 1)
        #expect(fcntl(client.rawValue, F_GETFD) & FD_CLOEXEC != 0, "close-on-exec")
        try client.sendAll([0x00, 0x01, 0x04])
        try client.acknowledgeQuickly()
        #expect(try server.read(upTo: 3) == [0x00, 0x01, 0x04])
        try server.writeAll([0x3B, 0x00])
        var answer = [UInt8](repeating: 0, count: 4)
        let count = try answer.withUnsafeMutableBytes { buffer in
            Result { () throws(Errno) in try client.receive(into: buffer) }
        }.get()
        #expect(Array(answer.prefix(count)) == [0x3B, 0x00])
    }

    @Test func nothingListeningIsConnectionRefused() throws {
        let port = try LoopbackListener().port  // closed again at once: nothing listens there now
        #expect(throws: Errno.connectionRefused) { _ = try FileDescriptor.tcpConnection(host: "127.0.0.1", port: port) }
    }

    @Test func quickAcknowledgementOnAFileIsNotSocket() throws {
        let file = try FileDescriptor.openForReading("/dev/null")
        #expect(throws: Errno.notSocket) { try file.acknowledgeQuickly() }
    }

    @Test func aSleepOfNothingReturnsAtOnceAndASleepLastsItsDuration() {
        var start = MonotonicClock.nanoseconds
        CurrentThread.sleep(for: .zero)
        CurrentThread.sleep(for: .milliseconds(-5))
        #expect(MonotonicClock.nanoseconds - start < 5_000_000)
        start = MonotonicClock.nanoseconds
        CurrentThread.sleep(for: .milliseconds(3), resumeAfterSignal: { false })
        #expect(MonotonicClock.nanoseconds - start >= 3_000_000)
    }
}
