import Foundation
import Testing
import TokenpinCore

@testable import TokenpinProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// A line that spans several reads leaves no copy of its bytes in the channel once it has been taken out.
@Suite struct LineChannelWipeTests {
    func pair() -> (writer: Int32, reader: LineChannel) {
        var fds: [Int32] = [0, 0]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
        return (fds[0], LineChannel(fd: fds[1], maximumLineLength: 1000))
    }

    /// Sends `chunks` one at a time with a pause between, so the reader sees each in its own `recv`; the
    /// semaphore is signalled once the last one is sent.
    func trickle(_ chunks: [[UInt8]], to fd: Int32) -> DispatchSemaphore {
        let sent = DispatchSemaphore(value: 0)
        let thread = Thread {
            for (index, chunk) in chunks.enumerated() {
                if index > 0 { usleep(30_000) }
                _ = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            sent.signal()
        }
        thread.start()
        return sent
    }

    static let secretLine = Array(#"{"v":1,"type":"secret","prompt":"pin","value":"739164-SECRET-739164"}"#.utf8)

    /// Whether `needle` occurs anywhere in `haystack`.
    func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<$0 + needle.count]) == needle }
    }

    @Test func aLineSpanningReadsLeavesTheBufferZero() throws {
        let (writer, reader) = pair()
        let line = Self.secretLine
        let chunks = stride(from: 0, to: line.count, by: 9).map { Array(line[$0..<min($0 + 9, line.count)]) } + [[0x0A]]
        #expect(chunks.count > 5)
        let sent = trickle(chunks, to: writer)
        defer {
            _ = sent.wait(timeout: .now() + 10)
            close(writer)
        }
        var received = try reader.readLine(timeoutMilliseconds: 5000)
        #expect(received == line)
        for index in received.indices { received[index] = 0 }
        let (bytes, buffered) = reader.receiveBufferSnapshot
        #expect(buffered == 0)
        #expect(
            !bytes.isEmpty && bytes.allSatisfy { $0 == 0 },
            "the receive buffer still holds \(bytes.filter { $0 != 0 }.count) bytes")
    }

    @Test func bytesAfterTheLineStayAndNothingElse() throws {
        let (writer, reader) = pair()
        defer { close(writer) }
        let next = Array(#"{"v":1,"type":"cancel"#.utf8)
        let all = Self.secretLine + [0x0A] + next
        let chunks = stride(from: 0, to: all.count, by: 13).map { Array(all[$0..<min($0 + 13, all.count)]) }
        // The line ends inside one chunk and the next message goes on after it: read once everything is sent,
        // so that what follows the line is in the buffer too.
        let sent = trickle(chunks, to: writer)
        #expect(sent.wait(timeout: .now() + 10) == .success)
        #expect(try reader.readLine(timeoutMilliseconds: 5000) == Self.secretLine)
        let (bytes, buffered) = reader.receiveBufferSnapshot
        #expect(buffered == next.count)
        #expect(buffered <= bytes.count && Array(bytes[0..<min(buffered, bytes.count)]) == next)
        let tailIsZero = bytes[buffered...].allSatisfy { $0 == 0 }
        let leaked = contains(bytes, Array("SECRET".utf8))
        #expect(tailIsZero)
        #expect(!leaked, "the secret line is still in the receive buffer")
    }

    @Test func aFailedReadWipesWhatArrived() throws {
        let (writer, reader) = pair()
        let partial = Array(Self.secretLine.prefix(40))
        _ = partial.withUnsafeBytes { send(writer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(writer)
        #expect(throws: ProtocolError(.truncated, "the connection closed in the middle of a message")) {
            try reader.readLine(timeoutMilliseconds: 2000)
        }
        let (bytes, buffered) = reader.receiveBufferSnapshot
        #expect(buffered == 0 && bytes.allSatisfy { $0 == 0 })
    }

    @Test func aTimeoutWipesWhatArrived() throws {
        let (writer, reader) = pair()
        defer { close(writer) }
        let partial = Array(Self.secretLine.prefix(40))
        _ = partial.withUnsafeBytes { send(writer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        #expect(throws: ProtocolError(.timeout, "no complete message arrived in time")) {
            try reader.readLine(timeoutMilliseconds: 200)
        }
        let (bytes, buffered) = reader.receiveBufferSnapshot
        #expect(buffered == 0 && bytes.allSatisfy { $0 == 0 })
    }
}

@Suite struct SecretLineTests {
    @Test(arguments: [[UInt8](), Array("482916".utf8), [0x00, 0x01, 0x1F, 0x22, 0x5C, 0x7F], Array("pïn ✓".utf8)])
    func aSecretLineIsBuiltInItsReservedBufferAndParsesBack(_ value: [UInt8]) throws {
        let line = ClientMessage.secretLine(prompt: "new-pin", value: value)
        // Every byte escaped (six bytes each) fits the reservation, so the buffer never grew.
        #expect(line.count <= 64 + "new-pin".utf8.count * 6 + value.count * 6)
        #expect(line.last == 0x0A)
        #expect(try ClientMessage.parse(Array(line.dropLast())) == .secret(prompt: "new-pin", value: value))
        #expect(ClientMessage.secret(prompt: "new-pin", value: value).line == line)
    }

    @Test func sendSecretWritesTheSameLine() throws {
        var fds: [Int32] = [0, 0]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
        let writer = LineChannel(fd: fds[0])
        let reader = LineChannel(fd: fds[1])
        let value = Array("739154".utf8)
        let secret = SecretBytes(count: value.count) { $0.copyBytes(from: value) }
        try writer.sendSecret(prompt: "pin", secret)
        #expect(
            try reader.readLine(timeoutMilliseconds: 2000)
                == Array(ClientMessage.secretLine(prompt: "pin", value: value).dropLast()))
    }
}
