import Foundation
import TokenpinService

/// Help in the argument-parser layout: OVERVIEW, USAGE, OPTIONS, SUBCOMMANDS.
enum Help {
    struct Entry {
        var name: String
        var abstract: String
        var usage: String
        var options: [(String, String)] = []
        var discussion: String?
    }

    static let globalOptions: [(String, String)] = [
        ("--store <dir>", "The record directory (default: $XDG_STATE_HOME/tokenpin)."),
        ("--config <file>", "A configuration file read after the standard ones."),
        ("--json", "Print one JSON object instead of text."),
        ("--no-color", "Do not colour the output (NO_COLOR is honoured too)."),
        ("--pin-stdin", "Read each secret as one line of standard input, in prompt order."),
        ("-q, --quiet", "Print nothing on success but what must be shown."),
        ("--reader <name>", "Use only this reader (a name or glob); 'sim' is the simulated card."),
        ("--serial <hex>", "Use only the card with this serial."),
        ("--socket <path>", "Talk to tokenpind on this socket (default: /run/tokenpin/socket when it exists)."),
        ("--local", "Do not use tokenpind: keep the record in the store directory."),
        ("--user <name>", "Act on this user's record (root only, through tokenpind)."),
        ("-h, --help", "Show help information."),
        ("--version", "Show the version."),
    ]

    static let commands: [Entry] = [
        Entry(name: "enrol", abstract: "Enrol a new PIN and show the recovery key once.",
              usage: "tokenpin enrol [--recovery-key-file <file>]",
              options: [("--recovery-key-file <file>", "Write the recovery key to a new file (mode 0600) instead of showing it.")],
              discussion: "Prompts: PIN, PIN again. The alias `enroll` works too."),
        Entry(name: "verify", abstract: "Verify with the token (when enabled and present) or the PIN.",
              usage: "tokenpin verify [--method pin|token]",
              options: [("--method pin|token", "Use only this authentication type, without fallback.")],
              discussion: "Prompts: card PIN when the token is used, else PIN; mode = both asks PIN, then card PIN.\n"
                  + "A wrong PIN reports the tries left; the last one says so; at 0 the PIN locks.\n"
                  + "A missing or failing token falls back to the PIN when fallback = allow; it costs no PIN try."),
        Entry(name: "change", abstract: "Change the PIN.",
              usage: "tokenpin change",
              discussion: "Prompts: current PIN, new PIN, new PIN again. The token is never used here and stays enabled."),
        Entry(name: "types", abstract: "List the authentication types and whether each is enabled.",
              usage: "tokenpin types"),
        Entry(name: "toggle", abstract: "Switch an authentication type on or off.",
              usage: "tokenpin toggle <type> on|off [--generate-key] [--yes] [--method pin|token]",
              options: [("--generate-key", "Replace the card's decryption key with a new cv25519 key (admin PIN); "
                            + "without it the key on the card (cv25519, RSA 2048-4096, NIST or brainpool ECDH) is used as it is."),
                        ("--yes", "Confirm that --generate-key replaces the card's decryption key."),
                        ("--method pin|token", "Verify `token off` with the PIN (default) or the card.")],
              discussion: "Types: pin (always enabled; `toggle pin off` is refused), token.\n"
                  + "Prompts for `token on`: PIN, admin PIN (only with --generate-key), card PIN.\n"
                  + "Prompts for `token off`: PIN (a wrong one counts), or card PIN with --method token; "
                  + "mode = both: PIN, card PIN."),
        Entry(name: "readers", abstract: "List the card readers and the card in each.",
              usage: "tokenpin readers"),
        Entry(name: "token", abstract: "Change or unblock the card's own PIN.",
              usage: "tokenpin token change-pin | unblock [--admin]",
              options: [("--admin", "Unblock with the admin PIN instead of the Reset Code.")],
              discussion: "Prompts: card PIN (or Reset Code / admin PIN), new card PIN, new card PIN again."),
        Entry(name: "status", abstract: "Show enrolment, tries left, lock, delay and key derivation.",
              usage: "tokenpin status"),
        Entry(name: "reset", abstract: "Set a new PIN with the recovery key and clear the lock.",
              usage: "tokenpin reset",
              discussion: "Prompts: recovery key, new PIN, new PIN again. A wrong recovery key is counted."),
        Entry(name: "bench", abstract: "Measure the key derivation and the verify latency on this machine.",
              usage: "tokenpin bench [--iterations <n>] [--token]",
              options: [("--iterations <n>", "Verifications to time (default 5)."),
                        ("--token", "Time token verifies against the same APDUs sent bare (prompts: card PIN, admin PIN).")]),
        Entry(name: "demo", abstract: "Walk through every flow in a temporary store, narrating each step.",
              usage: "tokenpin demo"),
        Entry(name: "import", abstract: "Move the local record into tokenpind's store.",
              usage: "tokenpin import",
              discussion: "The daemon refuses to overwrite a record it has; the local copy is removed after the move."),
        Entry(name: "watch", abstract: "Print tokenpind's events as JSON lines.",
              usage: "tokenpin watch",
              discussion: "Verified, wrong PIN, locked, reader and card events; a user sees their own, root everyone's."),
        Entry(name: "help", abstract: "Show help for tokenpin or one of its commands.",
              usage: "tokenpin help [<command>]"),
        Entry(name: "completions", abstract: "Print a shell completion script for bash, zsh or fish.",
              usage: "tokenpin completions bash|zsh|fish",
              discussion: "Installed as /usr/share/bash-completion/completions/tokenpin, "
                  + "/usr/share/zsh/vendor-completions/_tokenpin and /usr/share/fish/vendor_completions.d/tokenpin.fish."),
    ]

    static func optionsJSON(_ rows: [(String, String)]) -> JSONValue {
        .array(rows.map { .object([("name", .string($0.0)), ("abstract", .string($0.1))]) })
    }

    static func json(_ entry: Entry) -> JSONValue {
        .object([("name", .string(entry.name)), ("abstract", .string(entry.abstract)), ("usage", .string(entry.usage)),
                 ("options", optionsJSON(entry.options)), ("discussion", .optional(entry.discussion))])
    }

    static func entry(_ name: String) -> Entry? {
        commands.first { $0.name == (name == "enroll" ? "enrol" : name) }
    }

    static func columns(_ rows: [(String, String)]) -> String {
        let width = max(22, (rows.map(\.0.count).max() ?? 0) + 2)
        return rows.map { "  " + $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + $0.1 }.joined(separator: "\n")
    }

    static var main: String {
        """
        OVERVIEW: A PIN service that binds PIN verification to a smart card or hardware token.

        USAGE: tokenpin [<options>] <subcommand>

        OPTIONS:
        \(columns(globalOptions))

        SUBCOMMANDS:
        \(columns(commands.map { ($0.name, $0.abstract) }))

        EXIT CODES:
        \(columns(ExitCode.allCases.map { (String($0.rawValue), $0.meaning) }))

          See 'tokenpin help <subcommand>' for detailed help.
        """
    }

    static func text(for entry: Entry) -> String {
        var text = "OVERVIEW: \(entry.abstract)\n"
        if let discussion = entry.discussion { text += "\n\(discussion)\n" }
        text += "\nUSAGE: \(entry.usage)\n\nOPTIONS:\n\(columns(entry.options + globalOptions))\n"
        return text
    }
}
