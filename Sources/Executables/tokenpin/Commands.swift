import FoundationEssentials
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// One command: parsed into a plain value with one `run()`.
protocol Command {
    func run(_ context: Context) -> ExitCode
}

extension Context {
    /// Why a command that only tokenpind can run (`import`, `watch`) cannot run here.
    var noDaemon: ServiceError {
        if case .unreachable(let socket, let evidence) = mode {
            return .serviceUnavailable(Backend.unreachableMessage(socket: socket, evidence: evidence))
        }
        return .serviceUnavailable(
            "tokenpind is not running (no socket at \(DaemonClient.defaultSocketPath)); "
                + "start it, or name its socket with --socket")
    }

    /// Prints a service error and returns its exit code.
    func fail(_ error: ServiceError, extra: [(String, JSONValue)] = []) -> ExitCode {
        if case .notEnrolled = error, daemon != nil, (try? store.exists()) == true,
            (try? store.load(user: user)) != nil
        {
            // First contact with tokenpind while the record is still local: enrolling again is not the answer.
            return console.fail(
                .notEnrolled, errorCode: error.code,
                message:
                    "tokenpind has no record for \(user), but there is a local one (\(store.recordPath(for: user)))",
                hint: "move it into tokenpind with `tokenpin import`", extra: extra)
        }
        var extra = extra
        if case .passwordDelayed(let seconds) = error { extra.append(("retryAfter", .int(seconds))) }
        return console.fail(
            ExitCode(error), errorCode: error.code, message: error.message, hint: hint(for: error), extra: extra)
    }

    /// `tokenFailure` for `--json`: why the token was not used, and the card PIN's tries left as the card reported
    /// them in the `tokenFailed` event; failing that, when the card refused (`askCard`), as it reports them now.
    /// A card that went away is not probed again (null).
    func tokenFailureJSON(_ reason: String, askCard: Bool) -> JSONValue {
        let tries =
            interaction.tokenFailureCardTries
            ?? (askCard ? (try? backend.status())?.token?.cardPINTriesLeft : nil)
        return .object([("reason", .string(reason)), ("cardTriesLeft", .optional(tries))])
    }

    func hint(for error: ServiceError) -> String? {
        switch error {
        case .store(let store) where store.code == .corrupt || store.code == .unknownVersion:
            return "the file was left as it is; restore it from a backup or move it away and enrol again"
        case .store(let store) where store.code == .insecure:
            // Each hint answers what the error found, not the most common case.
            if store.detail.contains("symlink") {
                return "tokenpin never follows a symbolic link to a record or store; replace the link with the real "
                    + "directory or file"
            }
            if store.detail.contains("belongs to uid") {
                return
                    "a record or store owned by someone else could be swapped under you; give it to \(user) (chown), "
                    + "or use another --store"
            }
            if store.detail.contains("not a directory") || store.detail.contains("not a regular file") {
                return "move what is at \(store.path) away; tokenpin makes the store directory itself"
            }
            return "tokenpin refuses a store others can write and a record others can read or write; fix the mode "
                + "(chmod 700 DIR, chmod 600 FILE)"
        case .policyViolation(let rule):
            return interaction.allowed(rule).map { "allowed: \($0)" }
        case .input where !options.global.pinStdin:
            return "run it in a terminal, or pass the lines with --pin-stdin"
        default:
            return nil
        }
    }

    /// A remote or other attempt's fields for `--json` (`class`, `service`, `invokerUID`, `invoker`, `rhost`, `at`).
    func otherAttemptPairs(_ attempt: OtherAttempts.Attempt?, invoker: String?) -> [(String, JSONValue)] {
        guard let attempt else { return [] }
        return [
            ("class", .string(attempt.class.rawValue)), ("service", .optional(attempt.service)),
            ("invokerUID", .int(Int(attempt.invokerUID))), ("invoker", .optional(invoker)),
            ("rhost", .optional(attempt.rhost)), ("at", .optional(attempt.at)),
        ]
    }

    /// Prints the outcome of a verification-like operation and returns its exit code.
    func finish(
        _ report: VerifyReport, success: String, event successEvent: Event? = nil,
        extra: [(String, JSONValue)] = []
    ) -> ExitCode {
        let counter = report.counter
        var object: [(String, JSONValue)] = []
        let code = report.exitCode
        switch report.outcome {
        case .verified(let method):
            let event = successEvent ?? .verified(method: method)
            object =
                [("ok", .bool(true)), ("event", .string(event.name)), ("method", .string(method.rawValue))] + extra
            console.say(console.out.success(success))
        case .rejected(let remaining, let lastTry):
            object = [("ok", .bool(false)), ("event", .string("wrongPIN"))]
            console.note(
                console.err.error(successEvent == .reset ? "Wrong recovery key." : "Wrong PIN. ")
                    + (successEvent == .reset ? "" : CLIInteraction.triesText(remaining: remaining, lastTry: lastTry)))
            _ = lastTry
        case .locked:
            object = [("ok", .bool(false)), ("event", .string("locked"))]
            console.note(
                console.err.error("PIN locked: ")
                    + "no tries left. Unlock it with `tokenpin reset` and the recovery key.")
        case .delayed(let seconds):
            object = [("ok", .bool(false)), ("event", .string("delayed")), ("retryAfter", .int(seconds))]
            console.note(console.err.warning("Too many wrong entries: ") + "try again in \(seconds) s.")
        case .tokenRejected(let reason):
            object = [("ok", .bool(false)), ("event", .string("tokenFailed"))]
            console.note(console.err.error("Token not verified: ") + reason)
        }
        object.insert(("outcome", .string(report.outcome.protocolName)), at: 2)
        if let counter {
            object += [
                ("remaining", .int(counter.remaining)), ("lastTry", .bool(counter.remaining == 1)),
                ("locked", .bool(counter.isLocked)),
            ]
        }
        if let failure = report.tokenFailure, console.json {
            let refused = if case .tokenRejected = report.outcome { true } else { false }
            object.append(("tokenFailure", tokenFailureJSON(failure, askCard: refused)))
        }
        if report.countedApart { object.append(("counter", .string("others"))) }
        if let notice = report.otherAttempts {
            object.append(
                (
                    "otherAttempts",
                    .object(
                        [("failures", .int(notice.failures))]
                            + otherAttemptPairs(notice.last, invoker: notice.invoker))
                ))
        }
        if code != .success {
            let message: String
            switch report.outcome {
            case .locked: message = "the PIN is locked"
            case .delayed(let seconds): message = "failure delay: try again in \(seconds) s"
            case .tokenRejected(let reason): message = reason
            default: message = successEvent == .reset ? "wrong recovery key" : "wrong PIN"
            }
            let errorCode: String
            switch report.outcome {
            case .locked: errorCode = "locked"
            case .delayed: errorCode = "delayed"
            case .tokenRejected: errorCode = "token-rejected"
            default: errorCode = successEvent == .reset ? "wrong-recovery-key" : "wrong-pin"
            }
            object.append(
                (
                    "error",
                    .object([
                        ("code", .string(errorCode)), ("message", .string(message)),
                        ("exitCode", .int(Int(code.rawValue))),
                    ])
                ))
        }
        console.emit(object)
        return code
    }
}

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
        let status = try? context.backend.status()
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

func kdfJSON(_ kdf: KDFParameters) -> JSONValue {
    .object([
        ("algorithm", .string(kdf.algorithm.rawValue)), ("memoryMiB", .int(kdf.memoryKiB / 1024)),
        ("passes", .int(kdf.passes)), ("lanes", .int(1)),
    ])
}

extension Context {
    /// What refuses a verification (`verify`, `derive`) before anything is asked, or nil.
    func verificationRefusal(method: VerificationMethod?, command: String) -> ExitCode? {
        // Scripts never have their lines guessed: with the token enabled a line could be the card PIN or the
        // PIN, and a PIN sent to the card as its card PIN costs card tries (three block it).
        if method == nil, !interaction.asksOnTerminal,
            let types = try? backend.types(), types.contains(where: { $0.type == .token && $0.enabled })
        {
            return console.fail(
                .usage, errorCode: "usage",
                message:
                    "the token is enabled: without a terminal, \(command) needs --method pin|token to know what the line is",
                hint: "echo \"$PIN\" | " + hints.command(adding: ["--method", "pin", "--pin-stdin"])
                    + " (or --method token for the card PIN)")
        }
        // Which card the card PIN may go to (`--serial` naming another than the bound one) is the verifier's to
        // decide (PINService.verificationPlan), in this process and in tokenpind alike.
        return nil
    }
}

/// `tokenpin verify`: the PIN (the token first once it is enabled).
struct VerifyCommand: Command {
    var method: VerificationMethod?

    func run(_ context: Context) -> ExitCode {
        if let refusal = context.verificationRefusal(method: method, command: "verify") { return refusal }
        do {
            let report = try context.backend.verify(context.interaction, method: method)
            let success: String
            switch report.outcome {
            case .verified(.token): success = "Verified with the token."
            case .verified(.both): success = "Verified with the PIN and the token."
            default: success = "PIN verified."
            }
            return context.finish(report, success: success)
        } catch {
            let failure = context.interaction.tokenFailure
            return context.fail(
                error,
                extra: failure.map {
                    context.console.json ? [("tokenFailure", context.tokenFailureJSON($0, askCard: false))] : []
                } ?? [])
        }
    }
}

/// `tokenpin change`: the current PIN, then the new PIN twice.
struct ChangeCommand: Command {
    func run(_ context: Context) -> ExitCode {
        do {
            let report = try context.backend.change(context.interaction)
            return context.finish(report, success: "PIN changed.", event: .changed)
        } catch {
            return context.fail(error)
        }
    }
}

/// `tokenpin reset`: the recovery key, then a new PIN twice; clears the lock.
struct ResetCommand: Command {
    func run(_ context: Context) -> ExitCode {
        do {
            let report = try context.backend.reset(context.interaction)
            return context.finish(report, success: "New PIN set; the lock is cleared.", event: .reset)
        } catch {
            return context.fail(error)
        }
    }
}

/// `tokenpin types`: the authentication types and whether each is on, with the token's card and readers.
struct TypesCommand: Command {
    func run(_ context: Context) -> ExitCode {
        do {
            // One status read gives the types and the readers: the record is loaded and the cards probed once.
            let status = try context.backend.status()
            guard status.enrolled else { return context.fail(.notEnrolled(user: status.user, path: status.recordPath)) }
            let types = status.types
            let serial = types.first { $0.type == .token }?.serial
            let token = status.token ?? TokenStatus(readers: [], problem: "no card readers configured")
            for type in types {
                let state = type.enabled ? context.console.out.success("enabled ") : "disabled"
                var detail = type.canDisable ? "" : "  (always enabled)"
                if let serial = type.serial {
                    let present = token.readers.contains { $0.serial == serial }
                    detail = "  card \(cardLabel(serial: serial)), \(present ? "present" : "not present")"
                }
                context.console.say("\(type.type.rawValue.padded(to: 6)) \(state)\(detail)")
            }
            describeReaders(token, context: context, enrolledSerial: serial)
            context.console.emit([
                ("ok", .bool(true)), ("types", TypeStatus.protocolValue(types)),
                ("token", tokenJSON(token, enrolledSerial: serial)),
            ])
            return .success
        } catch {
            return context.fail(error)
        }
    }
}

/// A reader in `--json`: the codec's reader (the wire's), and whether its card is the enrolled one (`matches`).
func readerJSON(_ reader: ReaderInfo, enrolledSerial: String?) -> JSONValue {
    .object(
        reader.protocolMembers + [
            JSONMember("matches", .bool(enrolledSerial != nil && reader.serial == enrolledSerial))
        ])
}

/// The token side of a status in `--json`: the codec's (the wire's), with the enrolled card's `serial`, whether it
/// is `present`, and each reader's `matches`.
func tokenJSON(_ token: TokenStatus, enrolledSerial: String?) -> JSONValue {
    let readers = JSONValue.array(token.readers.map { readerJSON($0, enrolledSerial: enrolledSerial) })
    return .object(
        [JSONMember("serial", .optional(enrolledSerial)), JSONMember("present", .bool(token.matchingReader != nil))]
            + token.protocolMembers.map { $0.key == "readers" ? JSONMember("readers", readers) : $0 })
}

/// One line per reader: the card in it, whether tokenpin can use it, whether it is the enrolled one.
func describeReaders(_ token: TokenStatus, context: Context, enrolledSerial: String?) {
    if let problem = token.problem {
        context.console.say("Readers:    " + context.console.out.warning(problem))
        return
    }
    if token.readers.isEmpty { context.console.say("Readers:    none") }
    for reader in token.readers {
        var line = "Reader:     \(reader.name): "
        if !reader.cardPresent {
            line += "no card"
        } else if let serial = reader.serial {
            let application = reader.application.flatMap(TokenApplicationKind.init(rawValue:))?.displayName ?? "OpenPGP"
            let what = reader.application == TokenApplicationKind.pkcs11.rawValue ? "key" : "card"
            line += "\(application) \(what) \(cardLabel(serial: serial))"
            line += reader.usable ? ", usable" : ", not usable (\(reader.unusableReason ?? "unknown"))"
            if let key = reader.key { line += ", key \(key)" }
            if let tries = reader.cardPINTriesLeft {
                line += ", card PIN \(tries) \(tries == 1 ? "try" : "tries") left"
            }
            if serial == enrolledSerial { line += context.console.out.success(" [enrolled]") }
        } else {
            line += reader.unusableReason ?? "no OpenPGP or PIV application"
        }
        if let pinpad = reader.pinpad { line += "; " + pinpad.description }
        context.console.say(line)
    }
}

/// `tokenpin readers`: every reader and the card in it.
struct ReadersCommand: Command {
    func run(_ context: Context) -> ExitCode {
        let backend = context.backend
        let enrolled = (try? backend.types())?.first { $0.type == .token }?.serial
        do {
            let readers = try backend.listReaders().filter {
                context.selection.serial == nil || matches($0.serial, context.selection.serial)
            }
            describeReaders(TokenStatus(readers: readers), context: context, enrolledSerial: enrolled)
            context.console.emit([
                ("ok", .bool(true)),
                ("readers", .array(readers.map { readerJSON($0, enrolledSerial: enrolled) })),
            ])
            return .success
        } catch {
            return context.fail(error)
        }
    }
}

/// Whether a card serial (12 hex digits) is the one `--serial` names (8 or 12 hex digits, colons allowed).
func matches(_ serial: String?, _ wanted: String?) -> Bool {
    guard let wanted else { return true }
    guard let serial else { return false }
    let plain = wanted.replacing(":", with: "").uppercased()
    return serial.uppercased() == plain || (plain.count == 8 && serial.uppercased().hasSuffix(plain))
}

/// `tokenpin token change-pin | unblock [--admin]`: the card's own PIN.
struct TokenCommand: Command {
    enum Action { case changePIN, unblock }
    var action: Action
    var admin: Bool

    func run(_ context: Context) -> ExitCode {
        do {
            switch action {
            case .changePIN:
                try context.backend.changeCardPIN(context.interaction)
                context.console.say(context.console.out.success("Card PIN changed."))
            case .unblock:
                try context.backend.unblockCardPIN(context.interaction, admin: admin)
                context.console.say(context.console.out.success("Card PIN set; the card's PIN counter is reset."))
            }
            context.console.emit([
                ("ok", .bool(true)), ("event", .string(action == .changePIN ? "cardPINChanged" : "cardPINUnblocked")),
            ])
            return .success
        } catch {
            return context.fail(error)
        }
    }
}

/// `tokenpin toggle TYPE on|off [--generate-key] [--yes] [--method pin|token]`.
struct ToggleCommand: Command {
    var type: AuthenticationType
    var on: Bool
    var generateKey = false
    var assumeYes = false
    /// `toggle token off`: verify with the PIN (nil, the default) or the card.
    var method: VerificationMethod?
    /// `toggle token on`: the mode to bind in; `both` re-binds a card bound in `either`.
    var mode: VerificationMode?
    /// `toggle token on --app piv`: the slot whose key to bind or to generate into.
    var slot: String?

    func run(_ context: Context) -> ExitCode {
        switch (type, on) {
        case (.pin, _):
            do {
                try context.backend.togglePIN(on: on, context.interaction)
            } catch {
                return context.fail(error)
            }
            context.console.say("The PIN type is always enabled.")
            context.console.emit([
                ("ok", .bool(true)), ("event", .string("typeChanged")), ("type", .string("pin")),
                ("enabled", .bool(true)),
            ])
            return .success
        case (.token, true):
            do {
                let wasOn =
                    mode == .both
                    && ((try? context.backend.types())?.contains { $0.type == .token && $0.enabled } ?? false)
                let report = try context.backend.enableToken(
                    context.interaction, generateKey: generateKey,
                    assumeYes: assumeYes, mode: mode, slot: slot)
                let serial = (try? context.backend.types())?.first { $0.type == .token }?.serial
                let card = serial.map { cardLabel(serial: $0) } ?? "?"
                return context.finish(
                    report,
                    success: wasOn
                        ? "Token re-bound in mode both: card \(card); the record opens only with the PIN and the card."
                        : "Token enabled: card \(card).",
                    event: .typeChanged(type: .token, enabled: true),
                    extra: [("type", .string("token")), ("enabled", .bool(true)), ("serial", .optional(serial))])
            } catch .tokenAlreadyEnabled(let serial) {
                return unchanged(
                    context,
                    "The token is already enabled (card \(serial)); to bind another card, "
                        + "`tokenpin toggle token off` first.", enabled: true)
            } catch {
                return context.fail(error)
            }
        case (.token, false):
            do {
                let report = try context.backend.disableToken(context.interaction, method: method)
                return context.finish(
                    report, success: "Token disabled; verify with the PIN.",
                    event: .typeChanged(type: .token, enabled: false),
                    extra: [("type", .string("token")), ("enabled", .bool(false))])
            } catch .tokenNotEnabled {
                return unchanged(context, "The token is already disabled.", enabled: false)
            } catch {
                return context.fail(error)
            }
        }
    }

    /// `toggle token on` when on and `off` when off: the same answer both ways, success with nothing changed.
    func unchanged(_ context: Context, _ text: String, enabled: Bool) -> ExitCode {
        context.console.say(text)
        context.console.emit([
            ("ok", .bool(true)), ("event", .string("unchanged")), ("type", .string("token")),
            ("enabled", .bool(enabled)),
        ])
        return .success
    }
}

/// `tokenpin status`: enrolment, tries left, lock and delay, key derivation, where the record lives.
struct StatusCommand: Command {
    /// What a record bound in `either` under `mode = both` lacks, and how to add it.
    static let rebindAdvice =
        "Verification needs the PIN and the card, but a copy of the record still opens with "
        + "the PIN alone; re-binding adds the offline protection of the composite slot: "
        + "`tokenpin toggle token on --mode both` (asks the PIN, then the card)."

    func run(_ context: Context) -> ExitCode {
        let report: StatusReport
        do {
            report = try context.backend.status()
        } catch {
            return context.fail(error)
        }
        let say = context.console.say
        say("User:       \(report.user)")
        say("Service:    \(context.mode.description)")
        say("Record:     \(report.recordPath)")
        if report.enrolled {
            say("PIN:        enrolled")
            let tries = "\(report.remaining ?? 0) of \(report.maximum ?? 0)"
            say("Tries left: " + (report.locked ? context.console.out.error("0 (locked)") : tries))
            if report.delaySeconds > 0 { say("Delay:      \(report.delaySeconds) s before the next try") }
            if let kdf = report.kdf { say("KDF:        \(kdf.summary)") }
            for type in report.types {
                say(
                    "Type:       \(type.type.rawValue) \(type.enabled ? "enabled" : "disabled")\(type.serial.map { " (card \(cardLabel(serial: $0)))" } ?? "")"
                )
            }
            if let token = report.token, let source = token.revoked, let serial = enrolledSerialOf(report) {
                say(
                    "Token:      "
                        + context.console.out.warning(
                            "card \(cardLabel(serial: serial)) is revoked by this site (\(source)): no PIN is sent to it"
                        )
                        + (report.fallback == .allow ? "; verify asks the PIN" : ""))
            }
            if let token = report.token, let application = token.application.flatMap(TokenApplicationKind.init) {
                let key =
                    switch application {
                    case .piv: "PIV slot \(token.slot ?? "9d")"
                    case .pkcs11: "a PKCS#11 key"
                    case .openpgp: "the OpenPGP decryption key"
                    }
                say("Binding:    \(key), \(token.algorithm ?? "cv25519")")
            }
            if report.otherFailures > 0 || report.otherLast != nil {
                let notice = OtherAttemptsNotice(
                    failures: report.otherFailures, last: report.otherLast, invoker: report.otherLastInvoker)
                let locked = report.otherLocked ? "; locked for su and remote logins until you verify here" : ""
                say("Others:     " + notice.sentence + locked)
            }
            if let mode = report.mode, report.types.contains(where: { $0.type == .token && $0.enabled }) {
                let source =
                    report.modeSource == .configuration
                    ? "from the configuration; the token was bound in either" : "as the token was bound"
                say("Mode:       \(mode.rawValue) (\(source)), fallback \(report.fallback?.rawValue ?? "allow")")
                if report.rebindAdvised { say("            " + Self.rebindAdvice) }
            }
        } else {
            say("PIN:        not enrolled (run `tokenpin enrol`)")
        }
        let enrolledSerial = report.types.first { $0.type == .token }?.serial
        if let token = report.token { describeReaders(token, context: context, enrolledSerial: enrolledSerial) }
        var object: [(String, JSONValue)] = [
            ("ok", .bool(true)), ("user", .string(report.user)),
            ("backend", .string(context.daemon == nil ? "local" : "tokenpind")),
            ("socket", .optional(context.daemon?.socketPath)), ("record", .string(report.recordPath)),
            ("enrolled", .bool(report.enrolled)), ("remaining", .optional(report.remaining)),
            ("max", .optional(report.maximum)), ("lastTry", .bool(report.remaining == 1)),
            ("locked", .bool(report.locked)),
            ("lockedAt", .optional(report.lockedAt)), ("delay", .int(report.delaySeconds)),
            ("failures", .int(report.failures)),
            ("otherFailures", .int(report.otherFailures)), ("otherLocked", .bool(report.otherLocked)),
            (
                "otherLast",
                report.otherLast == nil
                    ? .null : .object(context.otherAttemptPairs(report.otherLast, invoker: report.otherLastInvoker))
            ),
        ]
        object.append(("kdf", report.kdf.map(kdfJSON) ?? .null))
        object.append(("types", report.enrolled ? TypeStatus.protocolValue(report.types) : .array([])))
        object.append(("mode", .optional(report.mode?.rawValue)))
        object.append(("fallback", .optional(report.fallback?.rawValue)))
        object.append(("modeSource", .optional(report.modeSource?.rawValue)))
        object.append(("advice", .optional(report.rebindAdvised ? Self.rebindAdvice : nil)))
        if let token = report.token { object.append(("token", tokenJSON(token, enrolledSerial: enrolledSerial))) }
        context.console.emit(object)
        return .success
    }
}

/// The serial of the card bound to the record a status describes.
func enrolledSerialOf(_ report: StatusReport) -> String? { report.types.first { $0.type == .token }?.serial }

/// `tokenpin import`: moves the local record into tokenpind's store (the daemon refuses to overwrite one).
struct ImportCommand: Command {
    func run(_ context: Context) -> ExitCode {
        guard let daemon = context.daemon else { return context.fail(context.noDaemon) }
        let path = context.store.recordPath(for: context.user)
        do {
            // The record's JSON (the current copy of a two-copy file), which tokenpind stores in its own format.
            guard try context.store.exists(), try context.store.load(user: context.user) != nil,
                let data = try context.store.recordJSON(user: context.user)
            else {
                if (try? daemon.types()) != nil {
                    return context.console.fail(
                        .usage, errorCode: "already-enrolled",
                        message: "the record of \(context.user) is already in tokenpind (imported or enrolled there); "
                            + "there is no local record at \(path) to import")
                }
                throw ServiceError.notEnrolled(user: context.user, path: path)
            }
            let remote = try daemon.importRecord([UInt8](data), context.interaction)
            // A copy left behind would be a second target for offline guessing: the record moves.
            try context.store.remove(user: context.user)
            context.console.say("Record moved to tokenpind: \(remote). The local copy \(path) was removed.")
            context.console.say(
                "The PIN may have been copied with the local file: set a fresh one that exists only "
                    + "in tokenpind with `tokenpin change`.")
            context.console.emit([
                ("ok", .bool(true)), ("event", .string("imported")), ("record", .string(remote)),
                ("removed", .string(path)), ("advice", .string("tokenpin change")),
            ])
            return .success
        } catch let error as ServiceError {
            return context.fail(error)
        } catch let error as StoreError {
            return context.fail(.store(error))
        } catch {
            return context.fail(.input("\(error)"))
        }
    }
}

/// `tokenpin watch`: tokenpind's events as JSON lines until interrupted.
struct WatchCommand: Command {
    func run(_ context: Context) -> ExitCode {
        guard let daemon = context.daemon else { return context.fail(context.noDaemon) }
        let quiet = context.console.quiet
        do {
            try daemon.watch { event in
                Console.write(1, Self.stamped(event, at: Date()) + "\n")
                return true
            } onSubscribed: { user in
                // On stderr, so stdout stays JSON lines; a script waits for it instead of sleeping.
                if !quiet { Console.write(2, Self.subscribed(user) + "\n") }
            }
        } catch {
            return context.fail(error)
        }
        // The handler never stops the stream: it ended because the daemon went away.
        return context.fail(
            .serviceUnavailable("tokenpind closed the connection (it stopped or restarted); no more events"))
    }

    /// The line that says the daemon confirmed the subscription: whose events follow (nil: every user's).
    static func subscribed(_ user: String?) -> String {
        "Watching tokenpind's events for " + (user ?? "every user") + "."
    }

    /// The event's JSON line with `time` (ISO 8601, UTC) after its name, unless the daemon already gave one.
    static func stamped(_ event: WatchedEvent, at date: Date) -> String {
        let line = event.jsonLine
        let head = "{\"event\":" + JSONValue.quote(event.name)
        guard line.hasPrefix(head), !event.fields.contains(where: { $0.key == "time" }) else { return line }
        let time = date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        return head + ",\"time\":" + JSONValue.quote(time) + line.dropFirst(head.count)
    }
}
