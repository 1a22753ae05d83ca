import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The sandbox `Simulator/pcscd-sandbox` sets up around a test run: a private pcscd with vpcd readers, and the
/// tokenpin-sim binary to plug virtual cards into them.
///
/// It announces itself in the environment: `TOKENPIN_SANDBOX=1`, the vpcd ports in reader order
/// (`TOKENPIN_VPCD_PORTS`), and `TOKENPIN_SIM_BIN`.
package enum PCSCSandbox {
    /// The environment the sandbox passed in.
    package static let environment = ProcessInfo.processInfo.environment

    /// Whether the tests run inside the sandbox.
    package static let isActive = environment["TOKENPIN_SANDBOX"] == "1"

    /// The vpcd ports, in reader order.
    package static var ports: [Int] {
        (environment["TOKENPIN_VPCD_PORTS"] ?? "").split(separator: ",").compactMap { Int($0) }
    }

    /// The PC/SC reader name that the vpcd port at `index` (in `ports`) shows up as.
    ///
    /// pcscd lists one reader entry per two vpcd ports, with slots `00 00` and `00 01`; the sandbox's
    /// reader.conf names them `tokenpin vpcd`.
    package static func reader(forPortIndex index: Int) -> String {
        "tokenpin vpcd \(index / 2 * 2) 00 0\(index % 2)"
    }

    /// The tokenpin-sim binary the sandbox names, or nil outside it.
    package static var simulatorBinary: String? { environment["TOKENPIN_SIM_BIN"] }
}

/// An error of the test support itself: the environment lacks something a test needs.
package struct TestSupportError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// A tokenpin-sim process: a virtual card in the vpcd reader of one sandbox port, seen through the real pcscd.
///
/// Starting it inserts the card and ending it pulls the card; callers wait for pcscd to show either in their own
/// way (a PC/SC context, or `tokenpin readers`).
package final class SimulatorProcess {
    /// The port's index in `PCSCSandbox.ports`.
    package let portIndex: Int
    /// The reader the card appears in.
    package var reader: String { PCSCSandbox.reader(forPortIndex: portIndex) }
    private let process = Process()

    /// Starts tokenpin-sim with its card state in `state`, attached to the vpcd port at `portIndex`.
    ///
    /// The card is never reinserted on its own (`--reinsert-after` far away); `arguments` go to tokenpin-sim.
    package init(portIndex: Int, state: String, arguments: [String] = []) throws {
        self.portIndex = portIndex
        let ports = PCSCSandbox.ports
        guard ports.indices.contains(portIndex) else {
            throw TestSupportError("the sandbox has no vpcd port number \(portIndex) (TOKENPIN_VPCD_PORTS)")
        }
        guard let binary = PCSCSandbox.simulatorBinary else { throw TestSupportError("TOKENPIN_SIM_BIN is not set") }
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments =
            ["--state", state, "--port", "\(ports[portIndex])", "--reinsert-after", "600000"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Whether the process (and so the card) is still there.
    package var isRunning: Bool { process.isRunning }

    /// Pulls the card: the process ends and vpcd sees its socket close.
    ///
    /// SIGKILL, not SIGTERM: a child of Foundation's `Process` inherits the signal mask of the test's dispatch
    /// thread, which blocks SIGTERM, and tokenpin-sim does not unblock it.
    package func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { kill() }
}
