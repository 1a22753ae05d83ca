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

    static let recoveryKeyFile = Option.value(
        "--recovery-key-file", valueName: "file",
        help: "Write the recovery key to a new file (mode 0600) instead of showing it.")
    static let verifyMethod = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "Use only this authentication type, without fallback.")
    static let toggleMethod = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "Verify `token off` with the PIN (default) or the card.")
    static let toggleMode = Option.value(
        "--mode", valueName: "mode", allowedValues: ["either", "both"],
        help: "Bind `token on` in this mode; the stricter of it and `mode` wins.")
    static let generateKey = Option.flag(
        "--generate-key",
        help:
            "Replace the card's decryption key with a new cv25519 key (admin PIN; PIV: a new P-256 key in an empty "
            + "retired slot, management key); without it, the key is used as it is."
    )
    static let yes = Option.flag("--yes", help: "Confirm that --generate-key replaces the card's decryption key.")
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
    static let slot = Option.value(
        "--slot", valueName: "slot",
        help: "PIV: the slot whose key to bind (9d by default; 9a, 9c, 9e, 82-95), or to generate into.")
    static let admin = Option.flag("--admin", help: "Unblock with the admin PIN instead of the Reset Code.")
    static let unenrolMethod = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "Verify with this type before the record goes (the same as verify's).")
    static let unenrolYes = Option.flag(
        "--yes", help: "Root with --user: remove the record without the typed confirmation.")
    package static let iterations = Option.value(
        "--iterations", valueName: "n", help: "Verifications to time (default 5).")
    package static let token = Option.flag(
        "--token",
        help:
            "Time token verifies against the same APDUs sent bare, or PKCS#11 calls made bare with --app pkcs11 "
            + "(prompts: card PIN, admin PIN).")

    static let deriveMethod = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "Verify with only this type, without fallback (the same as verify's).")
    static let keyFormat = Option.value(
        "--format", valueName: "format", allowedValues: KeyEncoding.allCases.map(\.rawValue),
        help: "Write the key as raw bytes (default), hex or base64 (the text forms end with a newline).")
    static let keyFD = Option.value("--fd", valueName: "n", help: "Write the key to this open file descriptor.")
    static let keyOutput = Option.value(
        "--output", valueName: "file", help: "Write the key to a new file (mode 0600; an existing file is refused).")

    static let ageMethod = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "recipient, identity: verify with only this type, without fallback (the same as verify's).")
    static let ageIdentityFile = Option.value(
        "--identity", valueName: "file",
        help: "recipient: read it from this identity file's tokenpin line (- for standard input), without a PIN.")
    static let agePlugin = Option.value(
        "--age-plugin", valueName: "state-machine",
        help: "plugin: the age plugin state machine age asks for (identity-v1; age-plugin-tokenpin passes it).")

    /// The options every command takes, in help order.
    static let global = [
        store, config, json, noColor, pinStdin, quiet, reader, serial, socket, local, user, noPinpad, help, version,
    ]
}

extension Program {
    /// tokenpin's whole command line: options, commands, their arguments, help and the exit-code table.
    static let tokenpin = Program(
        "tokenpin", overview: "A PIN service that binds PIN verification to a smart card or hardware token.",
        options: Options.global,
        subcommands: [
            Subcommand(
                "enrol", aliases: ["enroll"], abstract: "Enrol a new PIN and show the recovery key once.",
                discussion: "Prompts: PIN, PIN again. The alias `enroll` works too.",
                options: [Options.recoveryKeyFile]),
            Subcommand(
                "verify", abstract: "Verify with the token (when enabled and present) or the PIN.",
                discussion: "Prompts: card PIN when the token is used, else PIN; mode = both asks PIN, then card PIN.\n"
                    + "A wrong PIN reports the tries left; the last one says so; at 0 the PIN locks.\n"
                    + "A missing or failing token falls back to the PIN when fallback = allow; it costs no PIN try.",
                options: [Options.verifyMethod]),
            Subcommand(
                "derive", abstract: "Verify, then release the 32-byte key of an application.",
                discussion: "Prompts: as verify. A wrong PIN counts and releases nothing.\n"
                    + "The key goes to --fd N, a new --output FILE, or standard output when it is not a terminal; "
                    + "it is the same after change, reset and re-binding the card, and new after a new enrolment.\n"
                    + "APP: 1 to 64 of a-z 0-9 . _ : - (ssh:work, restic, age).",
                arguments: [Positional("app", label: "<app>")],
                options: [Options.deriveMethod, Options.keyFormat, Options.keyFD, Options.keyOutput]),
            Subcommand(
                "age", abstract: "age files behind the PIN or the card: the recipient, the identity, the plugin.",
                discussion: "recipient: the age1… recipient of the X25519 key derived for app age, after a "
                    + "verification (prompts: as verify); with --identity FILE read from the identity, no PIN.\n"
                    + "identity: the identity line AGE-PLUGIN-TOKENPIN-1… (and the recipient as a comment) for "
                    + "an identity file: it holds no secret, only the recipient and the user.\n"
                    + "plugin: the age plugin protocol on standard input and output; age runs it through "
                    + "age-plugin-tokenpin, and asks the PIN or the card PIN itself (age -d -i FILE).",
                arguments: [Positional("action", values: .oneOf(["recipient", "identity", "plugin"]))],
                options: [Options.ageMethod, Options.ageIdentityFile, Options.agePlugin]),
            Subcommand(
                "change", abstract: "Change the PIN.",
                discussion:
                    "Prompts: current PIN, new PIN, new PIN again. The token is never used here and stays enabled."),
            Subcommand("types", abstract: "List the authentication types and whether each is enabled."),
            Subcommand(
                "toggle", abstract: "Switch an authentication type on or off.",
                discussion: "Types: pin (always enabled; `toggle pin off` is refused), token.\n"
                    + "Prompts for `token on`: PIN, card PIN; with --generate-key then the admin PIN (PIV: management key).\n"
                    + "`token on --mode both` on a card bound in either re-binds it in both (prompts: PIN, card PIN): "
                    + "one composite slot that no copy of the record opens without the card.\n"
                    + "Prompts for `token off`: PIN (a wrong one counts), or card PIN with --method token; "
                    + "mode = both: PIN, card PIN.",
                arguments: [
                    Positional(
                        "type", values: .oneOf(AuthenticationType.allCases.map(\.rawValue)),
                        label: "<type>"),
                    Positional("state", values: .oneOf(["on", "off"])),
                ],
                options: [
                    Options.generateKey, Options.yes, Options.toggleMethod, Options.toggleMode, Options.app,
                    Options.slot, Options.tokenURI, Options.pkcs11Module,
                ]),
            Subcommand(
                "readers", abstract: "List the card readers and the card in each.",
                options: [Options.app, Options.tokenURI, Options.pkcs11Module]),
            Subcommand(
                "token", abstract: "Change or unblock the card's own PIN.",
                discussion: "Prompts: card PIN (or Reset Code / admin PIN), new card PIN, new card PIN again.",
                arguments: [Positional("action", values: .oneOf(["change-pin", "unblock"]))],
                options: [Options.admin, Options.app, Options.tokenURI, Options.pkcs11Module]),
            Subcommand("status", abstract: "Show enrolment, tries left, lock, delay and key derivation."),
            Subcommand(
                "reset", abstract: "Set a new PIN with the recovery key and clear the lock.",
                discussion: "Prompts: recovery key, new PIN, new PIN again. A wrong recovery key is counted.\n"
                    + "Root with --user NAME (through tokenpind): new PIN, new PIN again, without the recovery key; "
                    + "the record is made anew (a new recovery key, shown once; the token binding goes) and "
                    + "tokenpind logs it."),
            Subcommand(
                "unenrol", aliases: ["unenroll"], abstract: "Remove the record: the PIN, the recovery key, the token.",
                discussion: "Prompts: as verify (the PIN, or the card PIN); a wrong PIN counts and removes nothing.\n"
                    + "Root with --user NAME (through tokenpind): no verification; the user's name typed to go "
                    + "ahead, or --yes.",
                options: [Options.unenrolMethod, Options.unenrolYes]),
            Subcommand(
                "bench", abstract: "Measure the key derivation and the verify latency on this machine.",
                options: [Options.iterations, Options.token, Options.app, Options.tokenURI, Options.pkcs11Module]),
            Subcommand("demo", abstract: "Walk through every flow in a temporary store, narrating each step."),
            Subcommand(
                "doctor", abstract: "Check this machine's tokenpin: cards, tokenpind, PAM, configuration, record.",
                discussion: "pcscd and who holds each card; tokenpind and how it runs; every PAM stack that loads "
                    + "pam_tokenpin (would it fail open, or lock out root or the users without a record?); the "
                    + "configuration files and which set each value; the record; polkit; udev.\n"
                    + "The exit code is the worst finding's. It works with a broken configuration."),
            Subcommand(
                "import", abstract: "Move the local record into tokenpind's store.",
                discussion: "The daemon refuses to overwrite a record it has; the local copy is removed after the move."
            ),
            Subcommand(
                "watch", abstract: "Print tokenpind's events as JSON lines.",
                discussion:
                    "Verified, wrong PIN, locked, reader and card events; a user sees their own, root everyone's."),
            Subcommand(
                "help", abstract: "Show help for tokenpin or one of its commands.",
                arguments: [Positional("command", values: .subcommand, isOptional: true)]),
            Subcommand(
                "completions", abstract: "Print a shell completion script for bash, zsh or fish.",
                discussion: "Installed as /usr/share/bash-completion/completions/tokenpin, "
                    + "/usr/share/zsh/vendor-completions/_tokenpin and /usr/share/fish/vendor_completions.d/tokenpin.fish.",
                arguments: [Positional("shell", values: .oneOf(Shell.allCases.map(\.rawValue)))]),
        ],
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
