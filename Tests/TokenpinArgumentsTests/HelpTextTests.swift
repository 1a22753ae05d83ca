import Testing

@testable import TokenpinArguments

/// Help, usage lines and completion scripts come from the declarations.
@Suite struct HelpTextTests {
    let program = Fixture.program

    @Test func labelsShowValuesAndSpellings() {
        #expect(Fixture.quiet.label == "-q, --quiet")
        #expect(Fixture.store.label == "--store <dir>")
        #expect(Fixture.method.label == "--method pin|token")
        #expect(Fixture.state.usage == "--state <file>")
        #expect(Fixture.fault.usage == "[--fault <rule> ...]")
        #expect(Fixture.yes.usage == "[--yes]")
    }

    @Test func usageLinesAreGenerated() throws {
        let verify = try #require(program.subcommand(named: "verify"))
        let toggle = try #require(program.subcommand(named: "toggle"))
        let help = try #require(program.subcommand(named: "help"))
        #expect(program.usage() == "tool [<options>] <subcommand>")
        #expect(program.usage(for: verify) == "tool verify [--method pin|token]")
        #expect(program.usage(for: toggle) == "tool toggle <type> on|off [--yes] [--method pin|token]")
        #expect(program.usage(for: help) == "tool help [<command>]")
        #expect(
            Fixture.flat.usage() == "tool-sim --state <file> [--port <n>] [--fault <rule> ...]",
            "help and version flags are left out")
    }

    @Test func mainHelpHasTheArgumentParserLayout() {
        let text = program.helpText()
        #expect(text.hasPrefix("OVERVIEW: A tool.\n\nUSAGE: tool [<options>] <subcommand>\n\nOPTIONS:\n"))
        #expect(text.contains("\n  --store <dir>         The record directory.\n"))
        #expect(text.contains("\n  -q, --quiet           Print less.\n"))
        #expect(text.contains("\nSUBCOMMANDS:\n  enrol                 Enrol.\n"))
        #expect(text.contains("\nEXIT CODES:\n  0                     Success.\n  2                     Usage.\n"))
        #expect(text.hasSuffix("\n  See 'tool help <subcommand>' for detailed help.\n"))
        #expect(!text.contains("--recovery-key-file"), "a subcommand's options are in its own help")
    }

    @Test func groupedSubcommandsAreListedUnderTheirHeadingsInTheProgramsOrder() {
        var program = Fixture.program
        program.groups = ["PIN", "MORE"]
        program.subcommands = [
            Subcommand("verify", group: "PIN", abstract: "Verify."),
            Subcommand("help", abstract: "Help."),
            Subcommand("status", group: "MORE", abstract: "Status."),
            Subcommand("change", group: "PIN", abstract: "Change."),
            Subcommand("a-long-subcommand-name", group: "OTHER", abstract: "Long."),
            Subcommand("completions", abstract: "Completions."),
            Subcommand("enrol", group: "PIN", abstract: "Enrol."),
        ]
        let text = program.helpText()
        let start = text.firstRange(of: "\nSUBCOMMANDS:\n")?.lowerBound ?? text.endIndex
        let end = text.firstRange(of: "\nEXIT CODES:")?.lowerBound ?? text.endIndex
        // Ungrouped first in declaration order; then the declared groups in order, alphabetical within each; then a
        // group the program did not declare. One column for all.
        #expect(
            String(text[start..<end]) == """

                SUBCOMMANDS:
                  help                    Help.
                  completions             Completions.

                PIN SUBCOMMANDS:
                  change                  Change.
                  enrol                   Enrol.
                  verify                  Verify.

                MORE SUBCOMMANDS:
                  status                  Status.

                OTHER SUBCOMMANDS:
                  a-long-subcommand-name  Long.

                """)
        #expect(program.subcommandGroups.map(\.title) == [nil, "PIN", "MORE", "OTHER"])
    }

    @Test func withEveryCommandInAGroupThereIsNoSubcommandsHeading() {
        var program = Fixture.program
        program.groups = ["ALL"]
        program.subcommands = program.subcommands.map {
            var grouped = $0
            grouped.group = "ALL"
            return grouped
        }
        let text = program.helpText()
        #expect(!text.contains("\nSUBCOMMANDS:"))
        #expect(
            text.contains(
                "\nALL SUBCOMMANDS:\n  completions           Completions.\n  enrol                 Enrol.\n"
                    + "  help                  Help.\n  toggle                Toggle.\n  verify                Verify.\n"
            ))
        #expect(program.completionScript(for: .bash).contains("words=\"enrol verify toggle help completions $global\""))
    }

    @Test func subcommandHelpListsItsOptionsThenTheProgramOnes() throws {
        let text = program.helpText(for: try #require(program.subcommand(named: "verify")))
        #expect(
            text.hasPrefix(
                "OVERVIEW: Verify.\n\nUSAGE: tool verify [--method pin|token]\n\nOPTIONS:\n"
                    + "  --method pin|token    Use only this type.\n  --store <dir>"))
        #expect(text.hasSuffix("  --version             Show the version.\n"))
    }

    @Test func aProgramWithoutSubcommandsHasNoSubcommandSection() {
        let text = Fixture.flat.helpText()
        #expect(!text.contains("SUBCOMMANDS:") && !text.contains("See '"))
        #expect(
            text.contains("  --fault <rule>        Inject a fault.\n                        Twice.\n"),
            "a second line continues under the help column")
    }

    @Test func paragraphSectionsAndDiscussions() {
        var program = Fixture.flat
        program.discussion = "Starting it inserts the card."
        program.sections = [HelpSection("SIGNALS", text: "SIGTERM stops it.")]
        let text = program.helpText()
        #expect(text.hasPrefix("OVERVIEW: A card.\n\nStarting it inserts the card.\n\nUSAGE: "))
        #expect(text.hasSuffix("\nSIGNALS: SIGTERM stops it.\n"))
    }

    @Test func longUsageLinesWrapUnderTheProgramName() {
        var program = Fixture.flat
        program.options += (1...12).map { Option.flag("--option-number-\($0)", help: "An option.") }
        let block = program.usageBlock(for: nil)
        let lines = block.split(separator: "\n")
        #expect(lines.count > 1)
        #expect(lines.allSatisfy { $0.count <= Program.width })
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix(String(repeating: " ", count: 16) + "[--") })
        #expect(block.replacing(/\n +/, with: " ") == "USAGE: " + program.usage())
    }

    @Test func columnsWidenForLongLabels() {
        let text = Program.columns([("a", "one"), (String(repeating: "x", count: 30), "two")])
        #expect(
            text == "  a" + String(repeating: " ", count: 31) + "one\n  " + String(repeating: "x", count: 30) + "  two")
    }
}

@Suite struct CompletionScriptTests {
    let program = Fixture.program

    @Test func bashOffersSubcommandsOptionsAndValues() {
        let script = program.completionScript(for: .bash)
        #expect(script.contains("complete -F _tool tool\n"))
        #expect(script.contains("\"\") words=\"enrol verify toggle help completions $global\" ;;"))
        // Each argument position offers its own words; a `-` or a complete command line, the options.
        #expect(
            script.contains(
                "        toggle)\n            case \"$cur\" in\n                -*) words=\"--yes --method $global\" ;;"
            ))
        #expect(script.contains("0) words=\"pin token\" ;;"))
        #expect(script.contains("1) words=\"on off\" ;;"))
        #expect(script.contains("0) words=\"enrol verify toggle help completions\" ;;"))
        #expect(script.contains("--method) COMPREPLY=($(compgen -W \"pin token\" -- \"$cur\")); return ;;"))
        #expect(script.contains("--store) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;"))
        #expect(script.contains("--config) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;"))
        #expect(script.contains("local global=\"--store --config --json -q --quiet -h --help --version\""))
    }

    @Test func zshAndFishQuoteWhatTheyMust() {
        var program = Fixture.program
        program.options.append(.flag("--odd", help: "It's [odd]: yes"))
        let zsh = program.completionScript(for: .zsh)
        #expect(zsh.hasPrefix("#compdef tool\n"))
        #expect(zsh.contains("'--odd[It'\\''s \\[odd\\]\\: yes]'"))
        #expect(zsh.contains("'--method[Use only this type.]:value:(pin token)'"))
        let fish = program.completionScript(for: .fish)
        #expect(fish.contains("complete -c tool -l odd -d 'It\\'s [odd]: yes'"))
        #expect(fish.contains("complete -c tool -n '__fish_seen_subcommand_from verify' -l method -x -a 'pin token'"))
        #expect(fish.contains("complete -c tool -s q -l quiet -d 'Print less.'"))
    }

    @Test func aProgramNameWithADashMakesAValidFunctionName() {
        #expect(Fixture.flat.completionScript(for: .bash).contains("complete -F _tool_sim tool-sim"))
    }
}
