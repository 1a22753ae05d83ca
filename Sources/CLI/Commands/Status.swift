import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

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
            report = try context.backend.perform(Operation.Status())
        } catch {
            return context.fail(error)
        }
        let say = context.console.say
        say("User:       \(report.user)")
        say("Service:    \(context.mode.description)")
        say("Record:     \(report.recordPath)")
        if report.enrolled {
            describeEnrolment(report, context)
        } else {
            say("PIN:        not enrolled (run `tokenpin enrol`)")
        }
        let enrolledSerial = report.types.first { $0.type == .token }?.serial
        if let token = report.token { describeReaders(token, context: context, enrolledSerial: enrolledSerial) }
        context.console.emit(Self.json(report, context, enrolledSerial: enrolledSerial))
        return .success
    }

    /// The text lines of an enrolled user's status: tries, KDF, types, the token's binding, others' tries, mode.
    private func describeEnrolment(_ report: StatusReport, _ context: Context) {
        let say = context.console.say
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
    }

    /// The status in `--json`.
    private static func json(_ report: StatusReport, _ context: Context, enrolledSerial: String?) -> [(
        String, JSONValue
    )] {
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
        return object
    }
}

extension StatusCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "status", group: CommandGroup.pinAndRecord,
        abstract: "Show enrolment, tries left, lock, delay and key derivation.")

    static let traits: CommandTraits = [.readOnly]

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? { StatusCommand() }
}

/// The serial of the card bound to the record a status describes.
func enrolledSerialOf(_ report: StatusReport) -> String? { report.types.first { $0.type == .token }?.serial }
