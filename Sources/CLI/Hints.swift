import TokenpinArguments

/// Suggested commands built from the command the user ran: every `` `tokenpin …` `` in a message, a hint or a note
/// gets the user's own flags, so that typed as shown it acts on the same store, reader, card, daemon and user
/// (`--store`, `--reader`, `--serial`, `--socket`, `--local`, `--user`, `--config`, `--pin-stdin`) and, when it is
/// the same command, through the same options (`toggle token on --app piv` suggests
/// `tokenpin toggle token on --app piv --generate-key`, never an OpenPGP one). Never carried: output flags and
/// `--yes`, which a suggestion must not decide for the user.
struct CommandLineHints: Sendable {
    /// The user's global flags, as words (`--store`, `DIR`).
    var globalWords: [[String]] = []
    /// The user's command and its positional arguments (`toggle`, `token`, `on`).
    var command: [String] = []
    /// The user's options of that command, as words.
    var commandOptionWords: [[String]] = []

    /// The flags a suggestion keeps, in the order they are written.
    static let carriedGlobals: [Option] = [
        Options.store, Options.config, Options.reader, Options.serial, Options.socket, Options.local, Options.user,
        Options.pinStdin,
    ]

    init() {}

    init(_ parsed: ParsedCommandLine) {
        func words(_ option: Option) -> [String]? {
            guard parsed.values.isSet(option) else { return nil }
            guard option.takesValue else { return [option.name] }
            return parsed.values.value(option).map { [option.name, $0] }
        }
        globalWords = Self.carriedGlobals.compactMap(words)
        guard let name = parsed.command, let subcommand = Program.tokenpin.subcommand(named: name) else { return }
        command = [name] + parsed.arguments
        commandOptionWords = subcommand.options.filter { $0 != Options.yes }.compactMap(words)
    }

    /// `text` with every backticked `tokenpin …` completed with the user's flags.
    func rewrite(_ text: String) -> String {
        guard text.contains("`tokenpin") else { return text }
        var parts = text.split(separator: "`", omittingEmptySubsequences: false).map(String.init)
        // Odd parts are between backticks; an unclosed one at the end is left as it is.
        for index in stride(from: 1, to: parts.count - (parts.count % 2 == 0 ? 1 : 0), by: 2)
        where parts[index].hasPrefix("tokenpin") {
            parts[index] = complete(parts[index])
        }
        return parts.joined(separator: "`")
    }

    /// A suggestion (`tokenpin WORDS…`) with the user's flags.
    func complete(_ suggestion: String) -> String {
        let words = suggestion.split(separator: " ").map(String.init)
        guard words.first == "tokenpin" else { return suggestion }
        let given = Array(words.dropFirst())
        var result = ["tokenpin"]
        for flag in globalWords where !given.contains(flag[0]) && !contradicts(flag[0], given) { result += flag }
        result += given
        let positionals = Array(given.prefix { !$0.hasPrefix("-") })
        if !command.isEmpty, positionals == command {
            for option in commandOptionWords where !given.contains(option[0]) { result += option }
        }
        return result.map(Self.quoted).joined(separator: " ")
    }

    /// Whether the user's `flag` cannot go with the suggestion (it already chooses the other side of the mode).
    func contradicts(_ flag: String, _ words: [String]) -> Bool {
        (flag == "--local" && words.contains("--socket")) || (flag == "--socket" && words.contains("--local"))
    }

    /// The user's command with `extra` words added, as a suggestion: `tokenpin --store S verify --method pin`.
    func command(adding extra: [String]) -> String {
        "`" + complete((["tokenpin"] + command + extra).joined(separator: " ")) + "`"
    }

    /// A word as a shell reads it back: quoted when it holds anything but plain characters.
    static func quoted(_ word: String) -> String {
        let plain = word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_./:=@%+,-".contains($0)) }
        return plain && !word.isEmpty ? word : "'" + word.replacing("'", with: "'\\''") + "'"
    }
}
