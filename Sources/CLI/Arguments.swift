import TokenpinArguments
import TokenpinCore
import TokenpinService

/// A command line that cannot be run as given; the message names the problem.
package struct UsageError: Error {
    package var message: String
    package var command: String?

    package init(message: String, command: String?) {
        self.message = message
        self.command = command
    }

    init(_ error: ArgumentError) {
        self.init(message: error.message, command: error.subcommand)
    }
}

/// The options every command takes.
package struct GlobalOptions {
    var store: String?
    var config: String?
    package var json = false
    var noColor = false
    var pinStdin = false
    var quiet = false
    package var reader: String?
    var serial: String?
    var user: String?
    var socket: String?
    var local = false
    var noPinpad = false
}

/// The command line split into global options, the command and its own arguments.
package struct ParsedCommandLine {
    package var global = GlobalOptions()
    package var command: String?
    package var arguments: [String] = []
    /// Everything given, by declaration: `values.isSet(Options.yes)`, `values.value(Options.method)`.
    package var values = ParsedArguments()
    var wantsHelp = false
    var wantsVersion = false
}

/// tokenpin's options, each declared once: parsing, `tokenpin help`, usage lines and completions read these.
package enum Options {
    /// `--state-dir` is tokenpind's name for the same thing; either means local mode.
    static let store = Option.value(
        "--state-dir", "--store", valueName: "dir",
        help: "Use the local record directory DIR, never tokenpind (default: $XDG_STATE_HOME/tokenpin).")
    static let config = Option.value(
        "--config", valueName: "file",
        help: "A configuration file read after the standard ones (settings for a store need --local with tokenpind).")
    static let json = Option.flag("--json", help: "Print one JSON object instead of text.")
    static let noColor = Option.flag("--no-color", help: "Do not colour the output (NO_COLOR is honoured too).")
    static let pinStdin = Option.flag(
        "--pin-stdin", help: "Read each secret as one line of standard input, in prompt order.")
    static let quiet = Option.flag("-q", "--quiet", help: "Print nothing on success but what must be shown.")
    static let reader = Option.value(
        "--reader", valueName: "name", help: "Use only this reader (a name or glob); 'sim' is the simulated card.")
    static let serial = Option.value("--serial", valueName: "hex", help: "Use only the card with this serial.")
    static let socket = Option.value(
        "--socket", valueName: "path",
        help: "Talk to tokenpind on this socket (default: /run/tokenpin/socket when it exists).")
    static let local = Option.flag(
        "--local", help: "Do not use tokenpind: keep the record in the store directory (also implied by --store).")
    static let user = Option.value(
        "--user", valueName: "name", help: "Act on this user's record (root only, through tokenpind).")
    static let noPinpad = Option.flag(
        "--no-pinpad", help: "Type card PINs at the keyboard even where the reader has a keypad (pinpad = off).")
    static let help = Option.flag("-h", "--help", help: "Show help information.", stopsValidation: true)
    /// Not a validation stop: `--version` answers only without a command, so `verify extra --version` is the usage
    /// error it always was rather than a verify that ignores `extra`.
    static let version = Option.flag("-V", "--version", help: "Show the version.")

    // The options several commands take; an option only one command takes is declared in its file in Commands/.
    package static let app = Option.value(
        "--app", valueName: "app", allowedValues: TokenApplicationKind.allCases.map(\.rawValue),
        help:
            "The card application to bind or manage: openpgp, piv or pkcs11 (default: OpenPGP where the card has "
            + "it, else PIV).")
    package static let tokenURI = Option.value(
        "--token-uri", valueName: "uri",
        help: "PKCS#11: the RFC 7512 URI of the key to use (pkcs11:token=…;id=%01); implies --app pkcs11.")
    package static let pkcs11Module = Option.value(
        "--pkcs11-module", valueName: "path",
        help: "PKCS#11: load only this module (an absolute path) instead of p11-kit's; with --local only.")

    /// The options every command takes, in help order.
    static let global = [
        store, config, json, noColor, pinStdin, quiet, reader, serial, socket, local, user, noPinpad, help, version,
    ]
}

/// The headings `tokenpin help` lists the commands under; each command's declaration names its own.
enum CommandGroup {
    /// verify, derive, age: what a verification opens.
    static let verifyAndKeys = "VERIFICATION"
    /// enrol, change, reset, unenrol, status, types, import: the PIN and the record that keeps it.
    static let pinAndRecord = "PIN AND RECORD"
    /// toggle, token, readers: the card bound to the record, and its own PIN.
    static let card = "CARD"
    /// watch: what only the daemon does.
    static let daemon = "DAEMON"
    /// doctor, bench, demo, help, completions: this machine's tokenpin.
    static let machine = "UTILITY"

    /// The groups in the order help shows them.
    static let all = [verifyAndKeys, pinAndRecord, card, daemon, machine]
}

extension Program {
    /// tokenpin's whole command line: options, commands, their arguments, help and the exit-code table.
    static let tokenpin = Program(
        "tokenpin", overview: "A PIN service that binds PIN verification to a smart card or hardware token.",
        options: Options.global,
        subcommands: Commands.all.map { $0.declaration },
        groups: CommandGroup.all,
        refusedOptions: [
            RefusedOption(
                ["--pin", "--new-pin", "--recovery-key", "--card-pin", "--admin-pin"],
                reason: "PINs are never taken from the command line (other users can read it in /proc); "
                    + "type it at the prompt or use --pin-stdin")
        ],
        sections: [HelpSection("EXIT CODES", rows: ExitCode.allCases.map { (String($0.rawValue), $0.meaning) })])
}

/// tokenpin's command line through the one parser: global options anywhere, `--opt value` or `--opt=value`,
/// `--` ends options. PINs are never options: there is no flag that takes one.
enum ArgumentParser {
    /// An OpenPGP serial (8 hex digits, or 12 with the manufacturer, colons allowed) or a PIV identity:
    /// `piv-guid:` and 32 hex digits, `piv-serial:` and a decimal serial, `piv-key:` and 16 hex digits.
    static func isCardIdentity(_ text: String) -> Bool {
        !text.contains(where: \.isWhitespace) && CardIdentity.normalise(text) != nil
    }

    static func parse(_ argv: [String]) throws(UsageError) -> ParsedCommandLine {
        let values: ParsedArguments
        do {
            values = try Program.tokenpin.parse(argv)
        } catch {
            throw UsageError(error)
        }
        var result = ParsedCommandLine(command: values.subcommand, arguments: values.positionals, values: values)
        result.wantsHelp = values.isSet(Options.help)
        result.wantsVersion = values.isSet(Options.version)
        result.global.store = values.value(Options.store)
        result.global.config = values.value(Options.config)
        result.global.json = values.isSet(Options.json)
        result.global.noColor = values.isSet(Options.noColor)
        result.global.pinStdin = values.isSet(Options.pinStdin)
        result.global.quiet = values.isSet(Options.quiet)
        result.global.reader = values.value(Options.reader)
        result.global.user = values.value(Options.user)
        result.global.socket = values.value(Options.socket)
        result.global.local = values.isSet(Options.local)
        result.global.noPinpad = values.isSet(Options.noPinpad)
        if let serial = values.value(Options.serial) {
            guard Self.isCardIdentity(serial) else {
                throw UsageError(
                    message: "--serial takes 8 hex digits, or 12 with the manufacturer (FFFE:0000AAAA), "
                        + "or a PIV card's identity as `readers` shows it (piv-guid:…, piv-serial:…, piv-key:…), "
                        + "not '\(serial)'", command: result.command)
            }
            result.global.serial = serial
        }
        return result
    }
}
