import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// `tokenpin enrol`: a new PIN, entered twice; the recovery key is shown once.
struct EnrolCommand: Command {
    var recoveryKeyFile: String?

    func run(_ context: Context) -> ExitCode {
        // The key file is made before anything is enrolled: a file that cannot be made stops the command while
        // nothing exists yet, so the only copy of the key can never be lost on the way.
        // The raw descriptor, owned here: every path below closes it (`FileDescriptor(owning:)`).
        var keyFD: Int32 = -1
        if let recoveryKeyFile {
            switch Self.createSecretFile(recoveryKeyFile) {
            case .success(let fd): keyFD = fd
            case .failure(let error): return context.fail(error)
            }
        }
        let result: EnrolmentResult
        do {
            result = try context.backend.enrol(context.interaction)
        } catch {
            if let recoveryKeyFile {
                try? FileDescriptor(owning: keyFD).close()
                try? Paths.removeFile(recoveryKeyFile)
            }
            return context.fail(error)
        }
        var shownOn = "stdout"
        if let recoveryKeyFile {
            let file = FileDescriptor(owning: keyFD)
            if let error = Self.writeSecret(file, result.recoveryKeyText) {
                // The record exists; the key must still reach the person.
                try? file.close()
                context.console.note(
                    "error: cannot write \(recoveryKeyFile) (\(error)); "
                        + "the recovery key follows on stderr")
                showRecoveryKey(result.recoveryKeyText, fd: 2, context: context)
                return .ioError
            }
            try? file.close()
            shownOn = "file"
        } else if context.console.json {
            showRecoveryKey(result.recoveryKeyText, fd: 2, context: context)
            shownOn = "stderr"
        } else {
            Console.write(1, "PIN enrolled for \(context.user)\(context.daemon == nil ? "" : " through tokenpind").\n")
            showRecoveryKey(result.recoveryKeyText, fd: 1, context: context)
            context.console.say("Key derivation: \(result.kdf.summary). Record: \(result.recordPath)")
        }
        if let recoveryKeyFile {
            context.console.say("PIN enrolled for \(context.user). Recovery key written to \(recoveryKeyFile).")
        }
        // Every figure comes from the record as written (through tokenpind, the daemon's retries-max applies).
        let status = try? context.backend.perform(Operation.Status())
        let remaining = status?.remaining
        context.console.emit([
            ("ok", .bool(true)), ("event", .string("created")), ("user", .string(context.user)),
            ("remaining", .optional(remaining)), ("max", .optional(status?.maximum)),
            ("lastTry", .bool(remaining == 1)),
            ("locked", .bool(status?.locked ?? false)),
            ("recoveryKeyShownOn", .string(shownOn)), ("kdf", kdfJSON(result.kdf)),
            ("record", .string(result.recordPath)),
        ])
        return .success
    }

    func showRecoveryKey(_ text: borrowing SecretBytes, fd: Int32, context: Context) {
        Console.write(fd, "Recovery key (shown once: write it down and keep it apart from this computer):\n\n    ")
        text.withUnsafeBytes { bytes in
            try? FileDescriptor.withBorrowed(fd) { (stream: borrowing FileDescriptor) throws(Errno) in
                try stream.writeAll(bytes)
            }
        }
        Console.write(fd, "\n\nIt sets a new PIN with `tokenpin reset` when the PIN is forgotten or locked.\n")
    }

    /// Creates the recovery key file: new (`O_EXCL`, never through a symlink), mode 0600. The error says why not.
    static func createSecretFile(_ path: String) -> Result<Int32, ServiceError> {
        createSecretFile(path, purpose: "recovery key file", nothingDone: "nothing was enrolled")
    }

    /// Creates a file for a secret (`purpose` names it in the error, `nothingDone` says what did not happen):
    /// new (`O_EXCL`, never through a symlink), mode 0600.
    static func createSecretFile(_ path: String, purpose: String, nothingDone: String) -> Result<Int32, ServiceError> {
        let code: Errno
        do throws(Errno) {
            // The umask may have taken bits away, never added; createNew makes the mode exact.
            return .success(try FileDescriptor.createNew(path, mode: 0o600).release())
        } catch {
            code = error
        }
        let directory = Paths.parent(of: path)
        let why: String
        switch code {
        case .fileExists: why = "it exists (tokenpin never overwrites a file; name a new one)"
        case .noSuchFileOrDirectory: why = "the directory \(directory.isEmpty ? "." : directory) does not exist"
        case .permissionDenied, .notPermitted: why = "permission denied in \(directory.isEmpty ? "." : directory)"
        case .tooManySymbolicLinkLevels: why = "it is a symbolic link"
        case .notDirectory: why = "a part of the path is not a directory"
        default: why = code.description
        }
        return .failure(.input("cannot create the \(purpose) \(path): \(why); \(nothingDone)"))
    }

    /// Writes the key and a newline and flushes them to the device; the error when that fails.
    static func writeSecret(_ file: borrowing FileDescriptor, _ text: borrowing SecretBytes) -> Errno? {
        do throws(Errno) {
            try text.withUnsafeBytes { bytes in Result { () throws(Errno) in try file.writeAll(bytes) } }.get()
            try file.writeAll([0x0A])
            try file.fsync()
            return nil
        } catch {
            return error
        }
    }
}

extension EnrolCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "enrol", aliases: ["enroll"], group: CommandGroup.pinAndRecord,
        abstract: "Enrol a new PIN and show the recovery key once.",
        discussion: "Prompts: PIN, PIN again. The alias `enroll` works too.",
        options: [Options.recoveryKeyFile])

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? {
        EnrolCommand(recoveryKeyFile: parsed.values.value(Options.recoveryKeyFile))
    }
}

extension Options {
    static let recoveryKeyFile = Option.value(
        "--recovery-key-file", valueName: "file",
        help: "Write the recovery key to a new file (mode 0600) instead of showing it.")
}

/// A record's key derivation in `--json` (enrol, reset as root, status).
func kdfJSON(_ kdf: KDFParameters) -> JSONValue {
    .object([
        ("algorithm", .string(kdf.algorithm.rawValue)), ("memoryMiB", .int(kdf.memoryKiB / 1024)),
        ("passes", .int(kdf.passes)), ("lanes", .int(1)),
    ])
}
