import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// `tokenpin types`: the authentication types and whether each is on, with the token's card and readers.
struct TypesCommand: Command {
    func run(_ context: Context) -> ExitCode {
        do {
            // One status read gives the types and the readers: the record is loaded and the cards probed once.
            let status = try context.backend.perform(Operation.Status())
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

extension TypesCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "types", group: CommandGroup.pinAndRecord,
        abstract: "List the authentication types and whether each is enabled.")

    static let traits: CommandTraits = [.readOnly]

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? { TypesCommand() }
}
