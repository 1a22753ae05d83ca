import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// `tokenpin derive APP`: a verification exactly like `verify`, then the 32-byte key of APP on a descriptor, in a
/// new 0600 file, or on standard output when that is not a terminal.
///
/// Where the key goes is settled before anything is asked: a file that exists, a descriptor that is not open or is
/// a terminal, a terminal on standard output are refused before any prompt, so a refusal counts nothing. The key
/// is encoded in guarded memory and written from there; the text form ends with a newline, the raw form has none.
struct DeriveCommand: Command {
    /// Where the key goes.
    enum Destination: Equatable {
        case standardOutput
        case descriptor(Int32)
        case file(String)
    }

    var application: ApplicationName
    var method: VerificationMethod?
    var encoding: KeyEncoding
    var destination: Destination

    func run(_ context: Context) -> ExitCode {
        var context = context
        // A key on standard output shares it with nothing: the person's messages go to standard error.
        if destination == .standardOutput {
            if context.console.json {
                return usage(context, "--json and a key on standard output do not mix: use --fd N or --output FILE")
            }
            context.console.quiet = true
        }
        if let refusal = context.verificationRefusal(method: method, command: "derive") { return refusal }
        let output: Int32
        switch openDestination(context) {
        case .opened(let fd): output = fd
        case .refused(let code): return code
        }
        func abandon() {
            guard case .file(let path) = destination else { return }
            try? FileDescriptor(owning: output).close()
            try? Paths.removeFile(path)
        }
        var result: DerivedKey
        do {
            result = try context.backend.derive(context.interaction, application: application, method: method)
        } catch {
            abandon()
            return context.failVerification(error)
        }
        guard let key = result.key.take() else {
            abandon()
            return context.finish(result.report, success: "")
        }
        let text = encoding.encode(key)
        let failed = FileDescriptor.withBorrowed(output) { (file: borrowing FileDescriptor) -> Errno? in
            Self.write(text, newline: encoding != .raw, to: file, sync: destination != .standardOutput)
        }
        if case .file(let path) = destination {
            try? FileDescriptor(owning: output).close()
            if failed != nil { try? Paths.removeFile(path) }
        }
        if let failed {
            return context.fail(.input("cannot write the key (\(failed)); it was not kept anywhere"))
        }
        let shownOn: String
        switch destination {
        case .standardOutput: shownOn = "stdout"
        case .descriptor(let fd): shownOn = "fd \(fd)"
        case .file(let path): shownOn = path
        }
        return context.finish(
            result.report, success: "Key for \(application) written to \(shownOn).",
            extra: [("app", .string(application.rawValue)), ("format", .string(encoding.rawValue))])
    }

    /// Where the key may go: standard output or a descriptor that is no terminal, or a new key file.
    private enum Opened {
        case opened(Int32)
        case refused(ExitCode)
    }

    /// Opens (or checks) the destination before anything is asked, so a refusal costs no try.
    private func openDestination(_ context: Context) -> Opened {
        switch destination {
        case .standardOutput:
            guard !FileDescriptor.withBorrowed(1, { $0.isTerminal }) else {
                return .refused(
                    usage(
                        context,
                        "standard output is a terminal: the key would be shown; pipe it, or use --fd N or --output FILE"
                    ))
            }
            return .opened(1)
        case .descriptor(let fd):
            guard FileDescriptor.withBorrowed(fd, { $0.isOpen }) else {
                return .refused(usage(context, "descriptor \(fd) is not open"))
            }
            guard !FileDescriptor.withBorrowed(fd, { $0.isTerminal }) else {
                return .refused(usage(context, "descriptor \(fd) is a terminal: the key would be shown"))
            }
            return .opened(fd)
        case .file(let path):
            switch EnrolCommand.createSecretFile(path, purpose: "key file", nothingDone: "nothing was derived") {
            case .success(let fd): return .opened(fd)
            case .failure(let error): return .refused(context.fail(error))
            }
        }
    }

    func usage(_ context: Context, _ message: String) -> ExitCode {
        context.console.fail(.usage, errorCode: "usage", message: message)
    }

    /// Writes `text` (and a newline) to `file`; `sync`: flushed to the device (a file). The error when that fails.
    static func write(_ text: borrowing SecretBytes, newline: Bool, to file: borrowing FileDescriptor, sync: Bool)
        -> Errno?
    {
        do throws(Errno) {
            try text.withUnsafeBytes { bytes in Result { () throws(Errno) in try file.writeAll(bytes) } }.get()
            if newline { try file.writeAll([0x0A]) }
            if sync, (try? FileStatus.of(file))?.isRegularFile == true { try file.fsync() }
            return nil
        } catch {
            return error
        }
    }
}

extension DeriveCommand {
    /// The command from its parsed arguments; what the declarations cannot check is a usage error here.
    init(parsing values: ParsedArguments, arguments: [String], command: String) throws(UsageError) {
        guard let name = arguments.first else { throw UsageError(message: "expected <app>", command: command) }
        guard let application = ApplicationName(name) else {
            throw UsageError(
                message: "'\(name)' is not an application name: \(ApplicationName.shape)", command: command)
        }
        let fd = values.value(Options.keyFD)
        let output = values.value(Options.keyOutput)
        let destination: Destination
        switch (fd, output) {
        case (.some, .some):
            throw UsageError(
                message: "--fd and --output do not go together: the key goes to one place", command: command)
        case (.some(let text), nil):
            guard let number = Int32(text), number >= 0 else {
                throw UsageError(message: "--fd takes a descriptor number, not '\(text)'", command: command)
            }
            guard number != 0 else {
                throw UsageError(message: "--fd 0 is standard input, which the prompts may read", command: command)
            }
            destination = .descriptor(number)
        case (nil, .some(let path)):
            guard !path.isEmpty else { throw UsageError(message: "--output needs a file name", command: command) }
            destination = .file(path)
        case (nil, nil):
            destination = .standardOutput
        }
        self.init(
            application: application,
            method: values.value(Options.deriveMethod).flatMap(VerificationMethod.init(rawValue:)),
            encoding: values.value(Options.keyFormat).flatMap(KeyEncoding.init(rawValue:)) ?? .raw,
            destination: destination)
    }
}

extension DeriveCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "derive", group: CommandGroup.verifyAndKeys,
        abstract: "Verify, then release the 32-byte key of an application.",
        discussion: "Prompts: as verify. A wrong PIN counts and releases nothing.\n"
            + "The key goes to --fd N, a new --output FILE, or standard output when it is not a terminal; "
            + "it is the same after change, reset and re-binding the card, and new after a new enrolment.\n"
            + "APP: 1 to 64 of a-z 0-9 . _ : - (ssh:work, restic, age).",
        arguments: [Positional("app", label: "<app>")],
        options: [Options.deriveMethod, Options.keyFormat, Options.keyFD, Options.keyOutput])

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) throws(UsageError) -> (any Command)? {
        try DeriveCommand(parsing: parsed.values, arguments: parsed.arguments, command: declaration.name)
    }
}

extension Options {
    static let deriveMethod = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "Verify with only this type, without fallback (the same as verify's).")
    static let keyFormat = Option.value(
        "--format", valueName: "format", allowedValues: KeyEncoding.allCases.map(\.rawValue),
        help: "Write the key as raw bytes (default), hex or base64 (the text forms end with a newline).")
    static let keyFD = Option.value("--fd", valueName: "n", help: "Write the key to this open file descriptor.")
    static let keyOutput = Option.value(
        "--output", valueName: "file", help: "Write the key to a new file (mode 0600; an existing file is refused).")
}

extension UnreachableDaemon {
    func derive(_ interaction: some Interaction, application: ApplicationName, method: VerificationMethod?)
        throws(ServiceError) -> DerivedKey
    { throw error }
}
