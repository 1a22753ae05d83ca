import FoundationEssentials
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

/// Whether a card serial (12 hex digits) is the one `--serial` names (8 or 12 hex digits, colons allowed).
func matches(_ serial: String?, _ wanted: String?) -> Bool {
    guard let wanted else { return true }
    guard let serial else { return false }
    let plain = wanted.replacing(":", with: "").uppercased()
    return serial.uppercased() == plain || (plain.count == 8 && serial.uppercased().hasSuffix(plain))
}
