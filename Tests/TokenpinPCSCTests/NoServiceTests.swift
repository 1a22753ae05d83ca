import Foundation
import Testing
import TokenpinAPDU
import TokenpinPCSC
import TokenpinTestSupport

/// pcscd not running: every entry point gives `.noService` with the hint.
///
/// pcsc-lite reads `PCSCLITE_CSOCK_NAME` once per process and keeps it, so the check runs in a child: this
/// test binary again, filtered to `child()`, with the variable pointing at a socket that does not exist.
@Suite("pcscd not running")
struct NoServiceTests {
    static let resultVariable = "TOKENPIN_PCSC_NO_SERVICE_RESULT"
    static var resultPath: String? { ProcessInfo.processInfo.environment[resultVariable] }

    @Test(
        "a missing pcscd socket gives .noService and says how to start pcscd",
        .enabled(if: NoServiceTests.resultPath == nil))
    func noService() throws {
        let directory = temporaryDirectory("noservice")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let resultPath = directory + "/result"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--testing-library", "swift-testing", "--filter", "NoServiceTests/child"]
        var environment = ProcessInfo.processInfo.environment
        environment["PCSCLITE_CSOCK_NAME"] = "/nonexistent/tokenpin-test/pcscd.comm"
        environment[Self.resultVariable] = resultPath
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let lines = try String(contentsOfFile: resultPath, encoding: .utf8).split(separator: "\n").map(String.init)
        // One line per entry point: context, connection, monitor.
        #expect(lines.count == 3)
        for line in lines {
            #expect(line.hasPrefix("\(PCSCError.noService.rawValue) "))
            #expect(line.contains("systemctl start pcscd.socket"))
        }
    }

    @Test("child: runs only under noService()", .enabled(if: NoServiceTests.resultPath != nil))
    func child() throws {
        var lines: [String] = []
        func record(_ body: () throws(PCSCError) -> Void) {
            do {
                try body()
                lines.append("no error")
            } catch {
                lines.append("\(error.rawValue) \(error.hint ?? "no hint")")
            }
        }
        record { () throws(PCSCError) in _ = try PCSCContext() }
        record { () throws(PCSCError) in
            do throws(CardTransportError) {
                _ = try PCSCCardConnection(reader: "Virtual PCD 00 00")
            } catch {
                #expect(error.kind == .serviceUnavailable)
                throw error.pcscError ?? .unknownError  // no code: a deadline, not what pcscd down gives
            }
        }
        record { () throws(PCSCError) in _ = try ReaderMonitor() }
        try lines.joined(separator: "\n").write(
            toFile: try #require(Self.resultPath), atomically: true, encoding: .utf8)
    }
}
