import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinDoctor
import TokenpinProtocol
import TokenpinService

/// `tokenpin doctor [--json]`: every check of this machine's tokenpin (pcscd and who holds each card, tokenpind and
/// how it runs, the PAM stacks that load the module, the configuration files, the record, polkit, udev), as text or
/// one JSON object; the exit code is the worst finding's. It reads the configuration itself, so it works when the
/// configuration is what is broken.
struct DoctorCommand: Command {
    func run(_ context: Context) -> ExitCode { Self.run(context.options, mode: context.mode) }

    static func run(_ options: ParsedCommandLine, mode: Backend) -> ExitCode {
        let environment = ProcessEnvironment.current
        let socket: String
        if case .daemon(let path) = mode {
            socket = path
        } else {
            socket = options.global.socket ?? DaemonClient.defaultSocketPath
        }
        let user = options.global.user ?? Context.currentUserName()
        let store = RecordStore(
            directory: options.global.store ?? RecordStore.defaultDirectory(environment: environment))
        var files = Configuration.standardFiles(
            environment: environment, systemDirectory: SystemRoot.path("/etc/tokenpin"))
        if let explicit = options.global.config { files.append(explicit) }
        let throughDaemon = if case .daemon = mode { true } else { false }
        let setup = DoctorSetup(
            root: SystemRoot.prefix, socket: socket,
            daemonEvidence: DaemonClient.expectedDaemonEvidence(), throughDaemon: throughDaemon, store: store,
            user: user, configurationFiles: files,
            // A machine of the tests' own (TOKENPIN_SYSTEM_ROOT) has no pcscd of its own to look at.
            readers: options.global.reader != "sim" && SystemRoot.prefix.isEmpty)
        let findings = Doctor(setup: setup).run()
        let code = Doctor.exitCode(of: findings)
        if options.global.json {
            let checks = findings.map { finding -> JSONValue in
                .object([
                    ("check", .string(finding.check)), ("level", .string(finding.level.name)),
                    ("summary", .string(finding.summary)), ("details", .array(finding.details.map(JSONValue.string))),
                    ("fix", .optional(finding.fix)), ("exitCode", .int(Int(finding.exitCode.rawValue))),
                ])
            }
            Console.write(
                1,
                JSONValue.object([
                    ("ok", .bool(code == .success)), ("exitCode", .int(Int(code.rawValue))), ("checks", .array(checks)),
                ]).jsonText + "\n")
            return code
        }
        let counts = Finding.Level.allCases.reversed().compactMap { level -> String? in
            let count = findings.filter { $0.level == level }.count
            return count == 0 || level < .warning ? nil : "\(count) \(level.name)\(count == 1 ? "" : "s")"
        }
        var text = "tokenpin doctor: \(findings.count) findings"
        text += counts.isEmpty ? ", nothing wrong\n" : ", " + counts.joined(separator: ", ") + "\n"
        for finding in findings {
            text += finding.level.name.padded(to: 9) + finding.check.padded(to: 11) + finding.summary + "\n"
            for detail in finding.details { text += String(repeating: " ", count: 20) + detail + "\n" }
            if let fix = finding.fix { text += String(repeating: " ", count: 20) + "fix: " + fix + "\n" }
        }
        Console.write(1, text)
        return code
    }
}

extension DoctorCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "doctor", group: CommandGroup.machine,
        abstract: "Check this machine's tokenpin: cards, tokenpind, PAM, configuration, record.",
        discussion: "pcscd and who holds each card; tokenpind and how it runs; every PAM stack that loads "
            + "pam_tokenpin (would it fail open, or lock out root or the users without a record?); the "
            + "configuration files and which set each value; the record; polkit; udev.\n"
            + "The exit code is the worst finding's. It works with a broken configuration.")

    static let traits: CommandTraits = [.bothSides, .readsConfigurationItself]

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? { DoctorCommand() }
}
