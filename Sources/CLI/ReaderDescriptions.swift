import FoundationEssentials
import TokenpinCore
import TokenpinProtocol
import TokenpinService

// How readers and their cards are shown, as text and in `--json`: by `status`, `types` and `readers`.

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
