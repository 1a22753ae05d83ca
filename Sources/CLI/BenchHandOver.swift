import TokenpinArguments
import TokenpinCore
import TokenpinService
import TokenpinSystem

/// `tokenpin bench`, `tokenpin demo` and every command on the simulated card (`--reader sim`) run in tokenpin-bench,
/// the executable installed beside tokenpin that links the benchmark code and the simulator, so that the production
/// CLI links neither. tokenpin hands it the same arguments in its own place (exec, no shell): the flags, the output
/// and the exit codes are tokenpin-bench's, which runs the same code.
package enum BenchHandOver {
    /// The executable that runs what tokenpin hands over.
    package static let executableName = "tokenpin-bench"

    /// The commands tokenpin-bench runs for tokenpin.
    package static let commands: Set<String> = ["bench", "demo"]

    /// What tokenpin-bench runs `parsed` for: "`tokenpin bench`", "the simulated card (--reader sim)"; nil when
    /// tokenpin runs it itself. Reads `TOKENPIN_READER` alone (`getenv`): every command of tokenpin asks this.
    package static func reason(_ parsed: ParsedCommandLine) -> String? {
        if let command = parsed.command, commands.contains(command) { return "`tokenpin \(command)`" }
        let variable = CurrentProcess.environmentValue("TOKENPIN_READER")
        guard Context.wantsSimulatedCard(parsed, readerVariable: variable) else { return nil }
        return "the simulated card ("
            + (parsed.global.reader == nil ? "TOKENPIN_READER=sim" : "--reader sim") + ")"
    }

    /// Where tokenpin-bench is: beside this executable (`/proc/self/exe`), never one found on PATH.
    static var executablePath: String {
        let directory = CurrentProcess.executablePath.map { Paths.parent(of: $0) } ?? "/usr/bin"
        return directory + "/" + executableName
    }

    /// Runs tokenpin-bench with `arguments` (this process's, after its name) in this process's place; returns only
    /// when it cannot start, having said why (`reason`: what runs there): exit 69, as for any program tokenpin
    /// needs and cannot reach.
    package static func run(_ parsed: ParsedCommandLine, reason: String, arguments: [String]) -> ExitCode {
        let path = executablePath
        let error = CurrentProcess.replace(withProgramAt: path, arguments: [executableName] + arguments)
        return Console.plain(json: parsed.global.json).fail(
            .serviceUnavailable, errorCode: ServiceError.serviceUnavailable("").code,
            message: "\(reason) runs in \(executableName), which cannot be run from \(path) (\(error))",
            hint: "\(executableName) is installed beside tokenpin (`make install`, or the tokenpin package)")
    }
}
