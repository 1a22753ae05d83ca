import Foundation
import TokenpinCore
import TokenpinProtocol
import TokenpinService
#if canImport(Glibc)
import Glibc
#endif

/// One command: parsed into a plain value with one `run()`.
protocol Command {
    func run(_ context: Context) -> ExitCode
}

extension Context {
    /// Prints a service error and returns its exit code.
    func fail(_ error: ServiceError) -> ExitCode {
        console.fail(ExitCode(error), errorCode: error.code, message: error.message, hint: hint(for: error))
    }

    func hint(for error: ServiceError) -> String? {
        switch error {
        case .store(let store) where store.code == .corrupt || store.code == .unknownVersion:
            return "the file was left as it is; restore it from a backup or move it away and enrol again"
        case .store(let store) where store.code == .insecure:
            return "tokenpin refuses a store others can write; fix the owner and mode (chmod 700 DIR, chmod 600 FILE)"
        case .input where !options.global.pinStdin:
            return "run it in a terminal, or pass the lines with --pin-stdin"
        default:
            return nil
        }
    }

    /// Prints the outcome of a verification-like operation and returns its exit code.
    func finish(_ report: VerifyReport, success: String, event successEvent: Event? = nil,
                extra: [(String, JSONValue)] = []) -> ExitCode {
        let counter = report.counter
        var object: [(String, JSONValue)] = []
        let code: ExitCode
        switch report.outcome {
        case .verified(let method):
            code = .success
            let event = successEvent ?? .verified(method: method)
            object = [("ok", .bool(true)), ("event", .string(event.name)), ("method", .string(method.rawValue))] + extra
            console.say(console.out.success(success))
        case .rejected(let remaining, let lastTry):
            code = .notVerified
            object = [("ok", .bool(false)), ("event", .string("wrongPIN"))]
            console.note(console.err.error(successEvent == .reset ? "Wrong recovery key." : "Wrong PIN. ")
                + (successEvent == .reset ? "" : CLIInteraction.triesText(remaining: remaining, lastTry: lastTry)))
            _ = lastTry
        case .locked:
            code = .locked
            object = [("ok", .bool(false)), ("event", .string("locked"))]
            console.note(console.err.error("PIN locked: ") + "no tries left. Unlock it with `tokenpin reset` and the recovery key.")
        case .delayed(let seconds):
            code = .locked
            object = [("ok", .bool(false)), ("event", .string("delayed")), ("retryAfter", .int(seconds))]
            console.note(console.err.warning("Too many wrong entries: ") + "try again in \(seconds) s.")
        case .tokenRejected(let reason):
            code = .notVerified
            object = [("ok", .bool(false)), ("event", .string("tokenFailed"))]
            console.note(console.err.error("Token not verified: ") + reason)
        }
        if let counter {
            object += [("remaining", .int(counter.remaining)), ("lastTry", .bool(counter.remaining == 1)),
                       ("locked", .bool(counter.isLocked))]
        }
        if let failure = report.tokenFailure { object.append(("tokenFailure", .string(failure))) }
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
            object.append(("error", .object([("code", .string(errorCode)), ("message", .string(message)),
                                             ("exitCode", .int(Int(code.rawValue)))])))
        }
        console.emit(object)
        return code
    }
}

/// `tokenpin enrol`: a new PIN, entered twice; the recovery key is shown once.
struct EnrolCommand: Command {
    var recoveryKeyFile: String?

    func run(_ context: Context) -> ExitCode {
        let result: EnrolmentResult
        do {
            result = try context.backend.enrol(context.interaction)
        } catch {
            return context.fail(error)
        }
        var shownOn = "stdout"
        if let recoveryKeyFile {
            guard writeSecretFile(recoveryKeyFile, result.recoveryKeyText) else {
                // The record exists; the key must still reach the person.
                context.console.note("error: cannot write \(recoveryKeyFile); the recovery key follows on stderr")
                showRecoveryKey(result.recoveryKeyText, fd: 2, context: context)
                return .ioError
            }
            shownOn = "file"
        } else if context.console.json {
            showRecoveryKey(result.recoveryKeyText, fd: 2, context: context)
            shownOn = "stderr"
        } else {
            Console.write(1, "PIN enrolled for \(context.user).\n")
            showRecoveryKey(result.recoveryKeyText, fd: 1, context: context)
            context.console.say("Key derivation: \(result.kdf.summary). Record: \(result.recordPath)")
        }
        context.console.emit([
            ("ok", .bool(true)), ("event", .string("created")), ("user", .string(context.user)),
            ("remaining", .int(context.configuration.retriesMax)), ("lastTry", .bool(false)), ("locked", .bool(false)),
            ("recoveryKeyShownOn", .string(shownOn)), ("kdf", kdfJSON(result.kdf)), ("record", .string(result.recordPath)),
        ])
        return .success
    }

    func showRecoveryKey(_ text: borrowing SecretBytes, fd: Int32, context: Context) {
        Console.write(fd, "Recovery key (shown once: write it down and keep it apart from this computer):\n\n    ")
        text.withUnsafeBytes { bytes in _ = write(fd, bytes.baseAddress!, bytes.count) }
        Console.write(fd, "\n\nIt sets a new PIN with `tokenpin reset` when the PIN is forgotten or locked.\n")
    }

    func writeSecretFile(_ path: String, _ text: borrowing SecretBytes) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let ok = text.withUnsafeBytes { bytes in write(fd, bytes.baseAddress!, bytes.count) == bytes.count }
        return ok && write(fd, "\n", 1) == 1 && fsync(fd) == 0
    }
}

func kdfJSON(_ kdf: KDFParameters) -> JSONValue {
    .object([("algorithm", .string(kdf.algorithm.rawValue)), ("memoryMiB", .int(kdf.memoryKiB / 1024)),
             ("passes", .int(kdf.passes)), ("lanes", .int(1))])
}

/// `tokenpin verify`: the PIN (the token first once it is enabled).
struct VerifyCommand: Command {
    var method: VerificationMethod?

    func run(_ context: Context) -> ExitCode {
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
            return context.fail(error)
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

func typesJSON(_ types: [TypeStatus]) -> JSONValue {
    .array(types.map { type in
        var pairs: [(String, JSONValue)] = [("type", .string(type.type.rawValue)), ("enabled", .bool(type.enabled)),
                                            ("canDisable", .bool(type.canDisable))]
        if type.type == .token { pairs.append(("serial", .optional(type.serial))) }
        return .object(pairs)
    })
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
                context.console.say("\(type.type.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0)) \(state)\(detail)")
            }
            describeReaders(token, context: context, enrolledSerial: serial)
            context.console.emit([("ok", .bool(true)), ("types", typesJSON(types)),
                                  ("token", tokenJSON(token, enrolledSerial: serial))])
            return .success
        } catch {
            return context.fail(error)
        }
    }
}

func readerJSON(_ reader: ReaderInfo, enrolledSerial: String?) -> JSONValue {
    .object([("name", .string(reader.name)), ("cardPresent", .bool(reader.cardPresent)),
             ("serial", .optional(reader.serial)), ("openpgp", .bool(reader.isOpenPGP)), ("usable", .bool(reader.usable)),
             ("unusableReason", .optional(reader.unusableReason)),
             ("matches", .bool(enrolledSerial != nil && reader.serial == enrolledSerial)),
             ("cardPINTriesLeft", .optional(reader.cardPINTriesLeft))])
}

func tokenJSON(_ token: TokenStatus, enrolledSerial: String?) -> JSONValue {
    .object([("serial", .optional(enrolledSerial)), ("present", .bool(token.matchingReader != nil)),
             ("reader", .optional(token.matchingReader)), ("cardPINTriesLeft", .optional(token.cardPINTriesLeft)),
             ("problem", .optional(token.problem)),
             ("readers", .array(token.readers.map { readerJSON($0, enrolledSerial: enrolledSerial) }))])
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
            line += "OpenPGP card \(cardLabel(serial: serial))"
            line += reader.usable ? ", usable" : ", not usable (\(reader.unusableReason ?? "unknown"))"
            if let tries = reader.cardPINTriesLeft { line += ", card PIN \(tries) \(tries == 1 ? "try" : "tries") left" }
            if serial == enrolledSerial { line += context.console.out.success(" [enrolled]") }
        } else {
            line += reader.unusableReason ?? "not an OpenPGP card"
        }
        context.console.say(line)
    }
}

/// `tokenpin readers`: every reader and the card in it.
struct ReadersCommand: Command {
    func run(_ context: Context) -> ExitCode {
        let backend = context.backend
        let enrolled = (try? backend.types())?.first { $0.type == .token }?.serial
        do {
            let readers = try backend.listReaders()
            describeReaders(TokenStatus(readers: readers), context: context, enrolledSerial: enrolled)
            context.console.emit([("ok", .bool(true)),
                                  ("readers", .array(readers.map { readerJSON($0, enrolledSerial: enrolled) }))])
            return .success
        } catch {
            return context.fail(error)
        }
    }
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
            context.console.emit([("ok", .bool(true)), ("event", .string(action == .changePIN ? "cardPINChanged" : "cardPINUnblocked"))])
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

    func run(_ context: Context) -> ExitCode {
        switch (type, on) {
        case (.pin, _):
            do {
                try context.backend.togglePIN(on: on, context.interaction)
            } catch {
                return context.fail(error)
            }
            context.console.say("The PIN type is always enabled.")
            context.console.emit([("ok", .bool(true)), ("event", .string("typeChanged")), ("type", .string("pin")),
                                  ("enabled", .bool(true))])
            return .success
        case (.token, true):
            do {
                let report = try context.backend.enableToken(context.interaction, generateKey: generateKey,
                                                             assumeYes: assumeYes)
                let serial = (try? context.backend.types())?.first { $0.type == .token }?.serial
                return context.finish(report, success: "Token enabled: card \(serial.map { cardLabel(serial: $0) } ?? "?").",
                                      event: .typeChanged(type: .token, enabled: true),
                                      extra: [("type", .string("token")), ("enabled", .bool(true)), ("serial", .optional(serial))])
            } catch {
                return context.fail(error)
            }
        case (.token, false):
            do {
                let report = try context.backend.disableToken(context.interaction, method: method)
                return context.finish(report, success: "Token disabled; verify with the PIN.",
                                      event: .typeChanged(type: .token, enabled: false),
                                      extra: [("type", .string("token")), ("enabled", .bool(false))])
            } catch {
                return context.fail(error)
            }
        }
    }
}

/// `tokenpin status`: enrolment, tries left, lock and delay, key derivation, where the record lives.
struct StatusCommand: Command {
    func run(_ context: Context) -> ExitCode {
        let report: StatusReport
        do {
            report = try context.backend.status()
        } catch {
            return context.fail(error)
        }
        let say = context.console.say
        say("User:       \(report.user)")
        say("Record:     \(report.recordPath)")
        if report.enrolled {
            say("PIN:        enrolled")
            let tries = "\(report.remaining ?? 0) of \(report.maximum ?? 0)"
            say("Tries left: " + (report.locked ? context.console.out.error("0 (locked)") : tries))
            if report.delaySeconds > 0 { say("Delay:      \(report.delaySeconds) s before the next try") }
            if let kdf = report.kdf { say("KDF:        \(kdf.summary)") }
            for type in report.types {
                say("Type:       \(type.type.rawValue) \(type.enabled ? "enabled" : "disabled")\(type.serial.map { " (card \(cardLabel(serial: $0)))" } ?? "")")
            }
            if let mode = report.mode, report.types.contains(where: { $0.type == .token && $0.enabled }) {
                say("Mode:       \(mode.rawValue), fallback \(report.fallback?.rawValue ?? "allow")")
            }
        } else {
            say("PIN:        not enrolled (run `tokenpin enrol`)")
        }
        let enrolledSerial = report.types.first { $0.type == .token }?.serial
        if let token = report.token { describeReaders(token, context: context, enrolledSerial: enrolledSerial) }
        var object: [(String, JSONValue)] = [
            ("ok", .bool(true)), ("user", .string(report.user)), ("record", .string(report.recordPath)),
            ("enrolled", .bool(report.enrolled)), ("remaining", .optional(report.remaining)),
            ("max", .optional(report.maximum)), ("lastTry", .bool(report.remaining == 1)), ("locked", .bool(report.locked)),
            ("lockedAt", .optional(report.lockedAt)), ("delay", .int(report.delaySeconds)), ("failures", .int(report.failures)),
        ]
        object.append(("kdf", report.kdf.map(kdfJSON) ?? .null))
        object.append(("types", report.enrolled ? typesJSON(report.types) : .array([])))
        object.append(("mode", .optional(report.mode?.rawValue)))
        object.append(("fallback", .optional(report.fallback?.rawValue)))
        if let token = report.token { object.append(("token", tokenJSON(token, enrolledSerial: enrolledSerial))) }
        context.console.emit(object)
        return .success
    }
}

/// `tokenpin import`: moves the local record into tokenpind's store (the daemon refuses to overwrite one).
struct ImportCommand: Command {
    func run(_ context: Context) -> ExitCode {
        guard let daemon = context.daemon else {
            return context.fail(.serviceUnavailable("tokenpind is not running (no socket at \(DaemonClient.defaultSocketPath)); "
                + "start it, or name its socket with --socket"))
        }
        let path = context.store.recordPath(for: context.user)
        do {
            guard try context.store.load(user: context.user) != nil,
                  let data = FileManager.default.contents(atPath: path) else {
                throw ServiceError.notEnrolled(user: context.user, path: path)
            }
            let remote = try daemon.importRecord([UInt8](data), context.interaction)
            // A copy left behind would be a second target for offline guessing: the record moves.
            try context.store.remove(user: context.user)
            context.console.say("Record moved to tokenpind: \(remote). The local copy \(path) was removed.")
            context.console.emit([("ok", .bool(true)), ("event", .string("imported")), ("record", .string(remote)),
                                  ("removed", .string(path))])
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
        guard let daemon = context.daemon else {
            return context.fail(.serviceUnavailable("tokenpind is not running (no socket at \(DaemonClient.defaultSocketPath)); "
                + "start it, or name its socket with --socket"))
        }
        do {
            try daemon.watch { event in
                Console.write(1, event.jsonLine + "\n")
                return true
            }
            return .success
        } catch {
            return context.fail(error)
        }
    }
}
