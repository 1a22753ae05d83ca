import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

private func contents(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) }
}

@Suite struct ErrnoTests {
    @Test func errorsCompareByCode() throws {
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try FileDescriptor.open("/nonexistent/tokenpin", O_RDONLY)
        }
        #expect(Errno(rawValue: ENOENT) == .noSuchFileOrDirectory)
        #expect(Errno.fileExists != .noSuchFileOrDirectory)
    }

    @Test func descriptionIsTheCLibrarysMessage() {
        #expect(Errno.noSuchFileOrDirectory.description == String(cString: strerror(ENOENT)))
    }
}

@Suite struct FileDescriptorTests {
    @Test func writesAndReadsAll() throws {
        let path = temporaryDirectory() + "/file"
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        do {
            let file = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            try file.writeAll(bytes)
            try file.fsync()
        }
        let file = try FileDescriptor.open(path, O_RDONLY)
        #expect(try file.read(upTo: 10) == Array(bytes[0..<10]))
        #expect(try file.readAll(maximumCount: bytes.count) == Array(bytes[10...]))
        #expect(try file.read(upTo: 10) == [], "end of file")
    }

    @Test func readAllRefusesMoreThanTheLimit() throws {
        let path = temporaryDirectory() + "/file"
        try AtomicFile.replace(path: path, contents: [UInt8](repeating: 1, count: 100))
        let file = try FileDescriptor.open(path, O_RDONLY)
        #expect(throws: Errno.fileTooLarge) { _ = try file.readAll(maximumCount: 99) }
    }

    /// A writer faster than its reader fills the socket buffer; `sendAll` and `writeAll` carry on until all is read.
    @Test(arguments: [false, true]) func writeAllAcrossASocketPairWithAFullBuffer(send: Bool) throws {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let writer = FileDescriptor(owning: fds[0])
        var small: Int32 = 4096
        _ = setsockopt(writer.rawValue, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) }
        let readerFD = fds[1]
        let received = Received()
        let thread = Thread {
            let reader = FileDescriptor(owning: readerFD)
            received.bytes = (try? reader.readAll(maximumCount: 2 << 20)) ?? []
        }
        thread.start()
        if send { try writer.sendAll(bytes) } else { try writer.writeAll(bytes) }
        try writer.close()
        while !received.done { usleep(1000) }
        #expect(received.bytes == bytes)
    }

    @Test func fullNonBlockingSocketIsWouldBlock() throws {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let writer = FileDescriptor(owning: fds[0])
        let reader = FileDescriptor(owning: fds[1])
        #expect(throws: Errno.wouldBlock) {
            try writer.sendAll([UInt8](repeating: 0, count: 8 << 20), flags: Int32(MSG_DONTWAIT))
        }
        _ = reader
    }

    @Test func sendToAClosedPeerIsBrokenPipeNotASignal() throws {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let writer = FileDescriptor(owning: fds[0])
        try FileDescriptor(owning: fds[1]).close()
        #expect(throws: Errno.brokenPipe) { try writer.sendAll([1, 2, 3]) }
    }

    @Test func borrowedDescriptorStaysOpen() throws {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let reader = FileDescriptor(owning: fds[1])
        try FileDescriptor.withBorrowed(fds[0]) { (socket) throws(Errno) in try socket.sendAll([7]) }
        #expect(fcntl(fds[0], F_GETFD) >= 0, "still open")
        try FileDescriptor(owning: fds[0]).close()
        #expect(try reader.readAll(maximumCount: 10) == [7])
    }
}

/// What the reader thread received; written by that thread before `done`, read after it.
private final class Received: @unchecked Sendable {
    private let lock = NSLock()
    private var value: [UInt8]?
    var bytes: [UInt8] {
        get { lock.withLock { value ?? [] } }
        set { lock.withLock { value = newValue } }
    }
    var done: Bool { lock.withLock { value != nil } }
}

@Suite struct UnixSocketTests {
    @Test func pathTooLongIsRefused() {
        let long = "/tmp/" + String(repeating: "s", count: UnixSocketAddress.maximumPathLength)
        #expect(throws: Errno.nameTooLong) { _ = try UnixSocketAddress(path: long) }
        #expect(throws: Errno.nameTooLong) { _ = try UnixSocket.listen(path: long) }
        #expect(throws: Errno.nameTooLong) { _ = try UnixSocket.connect(path: long) }
        let longest = "/" + String(repeating: "s", count: UnixSocketAddress.maximumPathLength - 1)
        #expect(throws: Never.self) { _ = try UnixSocketAddress(path: longest) }
        #expect(throws: Errno.invalidArgument) { _ = try UnixSocketAddress(path: "") }
    }

    @Test func listensAndConnects() throws {
        let path = temporaryDirectory() + "/socket"
        let server = try UnixSocket.listen(path: path, mode: 0o666)
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & 0o777 == 0o666)
        let client = try UnixSocket.connect(path: path, sendTimeoutMilliseconds: 1000)
        let accepted = FileDescriptor(owning: accept(server.rawValue, nil, nil))
        try client.sendAll(Array("hello\n".utf8))
        #expect(try accepted.read(upTo: 6) == Array("hello\n".utf8))
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try UnixSocket.connect(path: temporaryDirectory() + "/nothing")
        }
    }
}

@Suite struct AtomicFileTests {
    @Test func replacesWithTheModeAndNoLeftover() throws {
        let path = temporaryDirectory() + "/record.json"
        try AtomicFile.replace(path: path, contents: Array("old".utf8))
        try AtomicFile.replace(path: path, contents: Array("new".utf8), mode: 0o644)
        #expect(contents(path) == Array("new".utf8))
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o644 & ~umaskValue())
        #expect(!FileManager.default.fileExists(atPath: AtomicFile.temporaryPath(for: path)))
    }

    /// A failure after any step leaves the old or the new contents, never a mixture, and no temporary file.
    @Test(arguments: AtomicFile.Step.allCases) func failureAfterAnyStepLeavesOldOrNew(step: AtomicFile.Step) throws {
        let path = temporaryDirectory() + "/record.json"
        let old = Array(String(repeating: "old ", count: 1000).utf8)
        let new = Array(String(repeating: "new!", count: 2000).utf8)
        try AtomicFile.replace(path: path, contents: old)
        #expect(throws: Errno.ioError) {
            try AtomicFile.replace(path: path, contents: new, mode: 0o600) { (reached) throws(Errno) in
                if reached == step { throw Errno.ioError }
            }
        }
        let now = contents(path)
        #expect(now == old || now == new)
        #expect(now == (step == .renamed || step == .directorySynced ? new : old))
        #expect(!FileManager.default.fileExists(atPath: AtomicFile.temporaryPath(for: path)))
    }

    @Test func leftoverTemporaryFileIsReplaced() throws {
        let path = temporaryDirectory() + "/record.json"
        _ = FileManager.default.createFile(atPath: AtomicFile.temporaryPath(for: path), contents: Data("{junk".utf8))
        try AtomicFile.replace(path: path, contents: [1])
        #expect(contents(path) == [1])
    }

    @Test func temporaryPathInTheWayIsAnError() throws {
        let path = temporaryDirectory() + "/record.json"
        try AtomicFile.replace(path: path, contents: [1])
        try FileManager.default.createDirectory(
            atPath: AtomicFile.temporaryPath(for: path),
            withIntermediateDirectories: false)
        #expect(throws: Errno.fileExists) { try AtomicFile.replace(path: path, contents: [2]) }
        #expect(contents(path) == [1])
    }

    @Test func symlinkedTargetIsRefused() throws {
        let directory = temporaryDirectory()
        try AtomicFile.replace(path: directory + "/elsewhere", contents: [1])
        try FileManager.default.createSymbolicLink(
            atPath: directory + "/record.json",
            withDestinationPath: directory + "/elsewhere")
        #expect(throws: Errno.tooManySymbolicLinkLevels) {
            try AtomicFile.replace(path: directory + "/record.json", contents: [2])
        }
        #expect(contents(directory + "/elsewhere") == [1])
    }

    @Test func symlinkedDirectoryIsRefused() throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/real", withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(
            atPath: directory + "/link", withDestinationPath: directory + "/real")
        #expect(throws: Errno.tooManySymbolicLinkLevels) {
            try AtomicFile.replace(path: directory + "/link/record.json", contents: [2])
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/real/record.json"))
    }

    @Test func symlinkAtTheTemporaryPathIsNotFollowed() throws {
        let directory = temporaryDirectory()
        let path = directory + "/record.json"
        // A planted link is removed as a leftover, never written through.
        try FileManager.default.createSymbolicLink(
            atPath: AtomicFile.temporaryPath(for: path),
            withDestinationPath: directory + "/victim")
        try AtomicFile.replace(path: path, contents: [3])
        #expect(!FileManager.default.fileExists(atPath: directory + "/victim"))
        #expect(contents(path) == [3])
    }

    @Test func splitsPaths() {
        #expect(AtomicFile.split("a/b/c").directory == "a/b" && AtomicFile.split("a/b/c").name == "c")
        #expect(AtomicFile.split("c").directory == "." && AtomicFile.split("c").name == "c")
        #expect(AtomicFile.split("/c").directory == "/" && AtomicFile.split("/c").name == "c")
    }
}

private func umaskValue() -> mode_t {
    let current = umask(0o022)
    umask(current)
    return current
}
