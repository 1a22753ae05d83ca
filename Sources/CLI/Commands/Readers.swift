import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// `tokenpin readers`: every reader and the card in it.
struct ReadersCommand: Command {
    func run(_ context: Context) -> ExitCode {
        let backend = context.backend
        let enrolled = (try? backend.perform(Operation.Types()))?.first { $0.type == .token }?.serial
        do {
            let readers = try backend.perform(Operation.Readers()).filter {
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

extension ReadersCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "readers", group: CommandGroup.card, abstract: "List the card readers and the card in each.",
        options: [Options.app, Options.tokenURI, Options.pkcs11Module])

    static let traits: CommandTraits = [.readOnly]

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? { ReadersCommand() }
}

/// Whether a card serial (12 hex digits) is the one `--serial` names (8 or 12 hex digits, colons allowed).
func matches(_ serial: String?, _ wanted: String?) -> Bool {
    guard let wanted else { return true }
    guard let serial else { return false }
    let plain = wanted.replacing(":", with: "").uppercased()
    return serial.uppercased() == plain || (plain.count == 8 && serial.uppercased().hasSuffix(plain))
}
