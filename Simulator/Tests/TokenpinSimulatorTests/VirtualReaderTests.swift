import Foundation
import Testing
import TokenpinAPDU
import TokenpinTestSupport

@testable import TokenpinSimulator

#if canImport(Glibc)
    import Glibc
#endif

/// The built `tokenpin-sim` binary, next to the test runner in the build directory; nil when not built.
let simulatorBinary: String? = {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [directory, directory.deletingLastPathComponent()] {
        let path = candidate.appendingPathComponent("tokenpin-sim").path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}()

/// A stand-in for vpcd's side of the vicc protocol: listens on loopback, accepts the card, frames messages.
final class FakeVPCD {
    let listener: Int32
    let port: UInt16
    var connection: Int32 = -1

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        guard bound == 0, listen(listener, 1) == 0 else { throw HarnessError("cannot listen on loopback") }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit {
        if connection >= 0 { close(connection) }
        close(listener)
    }

    /// Waits up to `seconds` for the card to connect.
    func accept(seconds: Int32 = 20) throws {
        if connection >= 0 { close(connection) }
        var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, seconds * 1000) == 1 else { throw HarnessError("the card did not connect") }
        connection = Glibc.accept(listener, nil, nil)
        guard connection >= 0 else { throw HarnessError("accept failed") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ payload: [UInt8]) {
        let message = [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
        _ = message.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The next framed message, or nil when the card closed the connection.
    func receive() -> [UInt8]? {
        func read(_ count: Int) -> [UInt8]? {
            var buffer = [UInt8](repeating: 0, count: count)
            var offset = 0
            while offset < count {
                let result = buffer[offset...].withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                guard result > 0 else { return nil }
                offset += result
            }
            return buffer
        }
        guard let header = read(2) else { return nil }
        let length = Int(header[0]) << 8 | Int(header[1])
        return length == 0 ? [] : read(length)
    }

    func exchange(_ hex: String) -> [UInt8]? {
        send(Hex.decode(hex) ?? [])
        return receive()
    }
}

func runSimulator(_ arguments: [String]) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: simulatorBinary ?? "/nonexistent")
    process.arguments = arguments
    process.standardError = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    return process
}

/// `tokenpin-sim` speaking the vicc protocol to a stand-in vpcd: controls, APDUs, faults, SIGTERM, exit codes.
/// Skipped when the binary is not built (swift build --product tokenpin-sim).
@Suite("tokenpin-sim", .enabled(if: simulatorBinary != nil), .serialized)
struct VirtualReaderTests {
    @Test("answers ATR, power and APDU messages, persists, and exits 0 on SIGTERM")
    func wireProtocol() throws {
        let directory = temporaryDirectory("sim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let vpcd = try FakeVPCD()
        let process = try runSimulator([
            "--state", directory + "/card.json", "--port", String(vpcd.port),
            "--host", "127.0.0.1", "--serial", "00C0FFEE",
        ])
        defer { if process.isRunning { process.terminate() } }
        try vpcd.accept()
        #expect(vpcd.exchange("04") == CardProfile.atr)
        vpcd.send([0x01])
        #expect(vpcd.exchange("00A4040006D27600012401") == [0x90, 0x00])
        let aid = vpcd.exchange("00CA004F00") ?? []
        #expect(aid.count == 18 && Array(aid[10..<14]) == [0x00, 0xC0, 0xFF, 0xEE])
        #expect(vpcd.exchange("0020008206303030303030") == [0x63, 0xC2])
        vpcd.send([0x02])  // reset
        #expect(vpcd.exchange("00CA00C400") == [0x6D, 0x00], "reset deselects the application")
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        let card = try SimulatedCard(stateFile: directory + "/card.json")
        #expect(card.serial == 0x00C0_FFEE)
        #expect(card.process(Hex.decode("00A4040006D27600012401") ?? []) == [0x90, 0x00])
        #expect(card.process(Hex.decode("00CA00C400") ?? []).prefix(7) == [0x01, 0x7F, 0x7F, 0x7F, 0x02, 0x00, 0x03])
    }

    @Test("--fault: a chosen status word, and a vanish that drops the connection then reinserts the card")
    func faults() throws {
        let directory = temporaryDirectory("sim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let vpcd = try FakeVPCD()
        let process = try runSimulator([
            "--state", directory + "/card.json", "--port", String(vpcd.port),
            "--host", "127.0.0.1", "--fault", "sw:6A88@CA*1", "--fault", "vanish@20*1",
            "--reinsert-after", "50",
        ])
        defer { if process.isRunning { process.terminate() } }
        try vpcd.accept()
        vpcd.send([0x01])
        #expect(vpcd.exchange("00A4040006D27600012401") == [0x90, 0x00])
        #expect(vpcd.exchange("00CA004F00") == [0x6A, 0x88])
        #expect(vpcd.exchange("00CA004F00")?.suffix(2) == [0x90, 0x00])
        #expect(vpcd.exchange("0020008206313233343536") == nil, "the card vanished")
        try vpcd.accept()
        vpcd.send([0x01])
        #expect(vpcd.exchange("00A4040006D27600012401") == [0x90, 0x00])
        #expect(vpcd.exchange("0020008206313233343536") == [0x90, 0x00])
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test(
        "usage errors exit 2",
        arguments: [
            ["--port", "1"], ["--state", "x", "--port", "0"], ["--state", "x", "--serial", "XYZ"],
            ["--state", "x", "--fault", "explode"], ["--state", "x", "--bogus"],
        ] as [[String]])
    func usageErrors(arguments: [String]) throws {
        let process = try runSimulator(arguments)
        process.waitUntilExit()
        #expect(process.terminationStatus == 2)
    }

    @Test("a corrupt state file exits 65 and is left alone")
    func corruptStateFile() throws {
        let directory = temporaryDirectory("sim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/card.json"
        try Data("{\"version\": 1, \"serial\":".utf8).write(to: URL(fileURLWithPath: path))
        let process = try runSimulator(["--state", path, "--port", "1"])
        process.waitUntilExit()
        #expect(process.terminationStatus == 65)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\"version\": 1, \"serial\":")
    }
}
