import Testing

@testable import TokenpinArguments

/// A small program shaped like tokenpin: options everywhere, subcommands with their own options and arguments.
enum Fixture {
    static let store = Option.value("--store", valueName: "dir", help: "The record directory.")
    static let config = Option.value("--config", valueName: "file", help: "A configuration file.")
    static let json = Option.flag("--json", help: "Print JSON.")
    static let quiet = Option.flag("-q", "--quiet", help: "Print less.")
    static let help = Option.flag("-h", "--help", help: "Show help information.", stopsValidation: true)
    static let version = Option.flag("--version", help: "Show the version.", stopsValidation: true)
    static let method = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "Use only this type.")
    static let yes = Option.flag("--yes", help: "Confirm.")
    static let keyFile = Option.value("--recovery-key-file", valueName: "file", help: "Write the key here.")

    static let program = Program(
        "tool", overview: "A tool.",
        options: [store, config, json, quiet, help, version],
        subcommands: [
            Subcommand("enrol", aliases: ["enroll"], abstract: "Enrol.", options: [keyFile]),
            Subcommand("verify", abstract: "Verify.", options: [method]),
            Subcommand(
                "toggle", abstract: "Toggle.",
                arguments: [
                    Positional("type", values: .oneOf(["pin", "token"]), label: "<type>"),
                    Positional("state", values: .oneOf(["on", "off"])),
                ],
                options: [yes, method]),
            Subcommand(
                "help", abstract: "Help.",
                arguments: [Positional("command", values: .subcommand, isOptional: true)]),
            Subcommand(
                "completions", abstract: "Completions.",
                arguments: [Positional("shell", values: .oneOf(["bash", "zsh", "fish"]))]),
        ],
        refusedOptions: [RefusedOption(["--pin", "--new-pin"], reason: "never on the command line")],
        sections: [HelpSection("EXIT CODES", rows: [("0", "Success."), ("2", "Usage.")])])

    /// A program without subcommands, shaped like tokenpin-sim.
    static let state = Option.value("--state", valueName: "file", isRequired: true, help: "The state file.")
    static let fault = Option.value("--fault", valueName: "rule", isRepeatable: true, help: "Inject a fault.\nTwice.")
    static let port = Option.value("--port", valueName: "n", help: "The port.")
    static let flat = Program("tool-sim", overview: "A card.", options: [state, port, fault, help])
}

/// Parsing: spellings, positions, the end of options, aliases and which error each bad command line gets.
@Suite struct ParserTests {
    let program = Fixture.program

    @Test func aValueFollowsOrIsJoinedWithEquals() throws {
        let apart = try program.parse(["--store", "/tmp/a", "verify"])
        let joined = try program.parse(["--store=/tmp/a", "verify"])
        #expect(apart.value(Fixture.store) == "/tmp/a")
        #expect(joined.value(Fixture.store) == "/tmp/a")
        #expect(apart == joined)
        #expect(try program.parse(["verify", "--method=token"]).value(Fixture.method) == "token")
        #expect(try program.parse(["--store=a=b", "verify"]).value(Fixture.store) == "a=b", "only the first = splits")
    }

    @Test func programOptionsGoAnywhereAndSubcommandOptionsAfterIt() throws {
        let parsed = try program.parse(["--json", "verify", "-q", "--method", "pin", "--config", "c"])
        #expect(parsed.subcommand == "verify")
        #expect(parsed.isSet(Fixture.json) && parsed.isSet(Fixture.quiet))
        #expect(parsed.value(Fixture.method) == "pin")
        #expect(parsed.value(Fixture.config) == "c")
        #expect(!parsed.isSet(Fixture.store) && parsed.value(Fixture.store) == nil)
        #expect(parsed.positionals.isEmpty)
    }

    @Test func eitherSpellingOfAFlagSetsIt() throws {
        #expect(try program.parse(["verify", "-q"]).isSet(Fixture.quiet))
        #expect(try program.parse(["verify", "--quiet"]).isSet(Fixture.quiet))
        #expect(Fixture.quiet.name == "--quiet")
    }

    @Test func doubleDashEndsOptions() throws {
        let parsed = try program.parse(["--", "toggle", "pin", "on"])
        #expect(parsed.subcommand == "toggle" && parsed.positionals == ["pin", "on"])
        let error = #expect(throws: ArgumentError.self) { try program.parse(["verify", "--", "--json"]) }
        #expect(error?.code == .unexpectedArgument)
        #expect(error?.message == "unexpected argument '--json'")
        #expect(try program.parse(["toggle", "--", "pin", "on"]).positionals == ["pin", "on"])
    }

    @Test func aLoneDashIsAnArgument() throws {
        let error = #expect(throws: ArgumentError.self) { try program.parse(["verify", "-"]) }
        #expect(error?.code == .unexpectedArgument)
        #expect(error?.message == "unexpected argument '-'")
    }

    @Test func theWordAfterAValueOptionIsItsValueEvenWithADash() throws {
        #expect(try program.parse(["--store", "-x", "verify"]).value(Fixture.store) == "-x")
    }

    @Test func anAliasGivesTheDeclaredName() throws {
        let parsed = try program.parse(["enroll", "--recovery-key-file", "k"])
        #expect(parsed.subcommand == "enrol")
        #expect(parsed.value(Fixture.keyFile) == "k")
        #expect(program.subcommand(named: "enroll")?.name == "enrol")
        #expect(program.subcommand(named: "nope") == nil)
    }

    @Test func noSubcommandIsLeftToTheCaller() throws {
        let parsed = try program.parse(["--json"])
        #expect(parsed.subcommand == nil && parsed.isSet(Fixture.json))
        #expect(try program.parse([]) == ParsedArguments())
    }

    @Test func positionalsAreCheckedAgainstTheirValues() throws {
        let parsed = try program.parse(["toggle", "token", "off", "--yes"])
        #expect(parsed.positionals == ["token", "off"] && parsed.isSet(Fixture.yes))
        #expect(try program.parse(["help"]).positionals.isEmpty, "an optional argument may be left out")
        #expect(try program.parse(["help", "enroll"]).positionals == ["enroll"], "an alias names a subcommand")
    }

    @Test func helpAndVersionStopValidation() throws {
        #expect(try program.parse(["toggle", "--help"]).isSet(Fixture.help))
        #expect(try program.parse(["toggle", "face", "--help"]).positionals == ["face"])
        #expect(try program.parse(["verify", "extra", "-h"]).positionals == ["extra"])
        #expect(try Fixture.flat.parse(["--help"]).isSet(Fixture.help))
        #expect(try program.parse(["--version"]).isSet(Fixture.version))
    }

    @Test func helpDoesNotHideOptionErrors() throws {
        let error = #expect(throws: ArgumentError.self) { try program.parse(["verify", "--frob", "--help"]) }
        #expect(error?.code == .unknownOption)
    }

    @Test func repeatedValuesAreKeptInOrder() throws {
        let parsed = try Fixture.flat.parse(["--state", "s", "--fault", "a", "--fault=b", "--port", "1", "--port", "2"])
        #expect(parsed.values(Fixture.fault) == ["a", "b"])
        #expect(parsed.value(Fixture.port) == "2", "the last value wins")
        #expect(parsed.values(Fixture.store) == [])
    }

    static let errors: [([String], ArgumentError.Code, String, String?)] = [
        (["frobnicate"], .unknownCommand, "unknown command 'frobnicate'", nil),
        (["verfy"], .unknownCommand, "unknown command 'verfy'; did you mean 'verify'?", "verify"),
        (["enrooll"], .unknownCommand, "unknown command 'enrooll'; did you mean 'enroll'?", "enroll"),
        (["verify", "--frob"], .unknownOption, "unknown option '--frob'", nil),
        (
            ["verify", "--methd", "pin"], .unknownOption, "unknown option '--methd'; did you mean '--method'?",
            "--method"
        ),
        (["verify", "-x"], .unknownOption, "unknown option '-x'", nil),
        (["verify", "--jsn"], .unknownOption, "unknown option '--jsn'; did you mean '--json'?", "--json"),
        (["enrol", "--method", "pin"], .optionNotForCommand, "'--method' is not an option of 'enrol'", nil),
        (["--yes", "toggle", "pin", "on"], .optionNotForCommand, "'--yes' is not an option of tool", nil),
        (["verify", "--pin", "482916"], .refusedOption, "--pin is not an option: never on the command line", nil),
        (["verify", "--new-pin=482916"], .refusedOption, "--new-pin is not an option: never on the command line", nil),
        (["verify", "--store"], .missingValue, "missing value for '--store'", nil),
        (["--store=", "verify"], .emptyValue, "empty value for '--store'", nil),
        (["--store", "", "verify"], .emptyValue, "empty value for '--store'", nil),
        (["verify", "--method", "face"], .invalidValue, "--method must be pin or token, not 'face'", nil),
        (
            ["verify", "--method", "tokn"], .invalidValue,
            "--method must be pin or token, not 'tokn'; did you mean 'token'?",
            "token"
        ),
        (["verify", "--json=yes"], .unexpectedValue, "'--json' takes no value", nil),
        (["toggle"], .missingArgument, "missing <type>", nil),
        (["toggle", "pin"], .missingArgument, "missing on|off", nil),
        (["toggle", "face", "on"], .invalidArgument, "unknown type 'face'; expected pin or token", nil),
        (["toggle", "pin", "maybe"], .invalidArgument, "unknown state 'maybe'; expected on or off", nil),
        (["completions", "tcsh"], .invalidArgument, "unknown shell 'tcsh'; expected one of bash, zsh, fish", nil),
        (
            ["completions", "zhs"], .invalidArgument,
            "unknown shell 'zhs'; expected one of bash, zsh, fish; did you mean 'zsh'?", "zsh"
        ),
        (["help", "stauts"], .unknownCommand, "unknown command 'stauts'", nil),
        (["help", "verfy"], .unknownCommand, "unknown command 'verfy'; did you mean 'verify'?", "verify"),
        (["toggle", "pin", "on", "now"], .unexpectedArgument, "unexpected argument 'now'", nil),
        (["verify", "extra"], .unexpectedArgument, "unexpected argument 'extra'", nil),
    ]

    @Test(arguments: errors)
    func eachBadCommandLineGetsItsError(
        arguments: [String], code: ArgumentError.Code, message: String, suggestion: String?
    ) throws {
        let error = #expect(throws: ArgumentError.self) { try program.parse(arguments) }
        #expect(error?.code == code)
        #expect(error?.message == message)
        #expect(error?.description == message)
        #expect(error?.suggestion == suggestion)
    }

    @Test func errorsNameTheSubcommandForTheUsageHint() throws {
        let inside = #expect(throws: ArgumentError.self) { try program.parse(["toggle", "pin"]) }
        #expect(inside?.subcommand == "toggle")
        let before = #expect(throws: ArgumentError.self) { try program.parse(["--frob", "toggle"]) }
        #expect(before?.subcommand == nil)
        let unknown = #expect(throws: ArgumentError.self) { try program.parse(["frob"]) }
        #expect(unknown?.subcommand == nil)
    }

    @Test func aRequiredOptionIsRequired() throws {
        let error = #expect(throws: ArgumentError.self) { try Fixture.flat.parse(["--port", "1"]) }
        #expect(error?.code == .missingOption)
        #expect(error?.message == "--state <file> is required")
        #expect(try Fixture.flat.parse(["--state", "s"]).value(Fixture.state) == "s")
    }

    @Test func aProgramWithoutSubcommandsTakesWordsAsArguments() throws {
        let error = #expect(throws: ArgumentError.self) { try Fixture.flat.parse(["--state", "s", "verify"]) }
        #expect(error?.code == .unexpectedArgument)
        #expect(error?.message == "unexpected argument 'verify'")
        let withArguments = Program("p", overview: "P.", options: [], arguments: [Positional("file")])
        #expect(try withArguments.parse(["a"]).positionals == ["a"])
        let missing = #expect(throws: ArgumentError.self) { try withArguments.parse([]) }
        #expect(missing?.code == .missingArgument)
        #expect(missing?.message == "missing <file>")
    }

    /// Any mix of declared and stray words parses or fails with an `ArgumentError`, never traps.
    @Test func randomCommandLinesParseOrFailCleanly() {
        let vocabulary = [
            "verify", "toggle", "pin", "on", "off", "--", "-", "--store", "--store=", "--method",
            "--method=pin", "--json", "--json=1", "-q", "--help", "--pin", "=", "--=", "-=x", "",
            "help", "enroll", "completions", "zsh", "--yes", "x", "--recovery-key-file",
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % UInt64(vocabulary.count))
        }
        var outcomes = (parsed: 0, refused: 0)
        for _ in 0..<3000 {
            let arguments = (0..<(next() % 7)).map { _ in vocabulary[next()] }
            do {
                _ = try program.parse(arguments)
                outcomes.parsed += 1
            } catch {
                #expect(!error.message.isEmpty)
                outcomes.refused += 1
            }
        }
        #expect(outcomes.parsed > 0 && outcomes.refused > 0)
    }
}

/// "Did you mean": edit distance and how close counts as a typo.
@Suite struct SuggestionTests {
    @Test(arguments: [
        ("verify", "verify", 0), ("verfy", "verify", 1), ("vreify", "verify", 1), ("", "abc", 3), ("abc", "", 3),
        ("kitten", "sitting", 3),
    ])
    func editDistance(a: String, b: String, distance: Int) {
        #expect(Suggestion.editDistance(Array(a), Array(b)) == distance)
    }

    @Test func onlyCloseWordsAreSuggested() {
        #expect(Suggestion.closest("stauts", among: ["status", "types"]) == "status")
        #expect(Suggestion.closest("tpyes", among: ["status", "types"]) == "types")
        #expect(Suggestion.closest("xyzzy", among: ["status", "types"]) == nil)
        #expect(Suggestion.closest("pn", among: ["pin"]) == "pin", "short words allow one edit")
        #expect(Suggestion.closest("px", among: ["pin"]) == nil)
        #expect(Suggestion.closest("-x", among: ["-q", "-h"]) == nil, "one edit in two characters is no typo")
        #expect(Suggestion.closest("ab", among: ["abc"]) == "abc")
        #expect(Suggestion.closest("VERFY", among: ["verify"]) == "verify", "case does not count")
        #expect(Suggestion.didYouMean("verfy", among: ["verify"]) == "; did you mean 'verify'?")
        #expect(Suggestion.didYouMean("zzz", among: ["verify"]).isEmpty)
    }

    @Test func choicesReadAsEnglish() {
        #expect(Program.choice(["sim"]) == "sim")
        #expect(Program.choice(["pin", "token"]) == "pin or token")
        #expect(Program.choice(["bash", "zsh", "fish"]) == "one of bash, zsh, fish")
    }
}
