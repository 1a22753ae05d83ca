import Foundation
import Testing
import TokenpinArguments

@testable import TokenpinCLI

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 19, item 4: each command is one file in Sources/CLI/Commands, and the list the build writes of them
/// (`Commands.all`) is what parsing, help and `makeCommand` read; no list of commands is kept by hand.
@Suite struct DeclaredCommandsTests {
    /// The files directly in Sources/CLI/Commands, without `.swift`, sorted.
    static let commandFiles: [String] = {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let folder = tests.appendingPathComponent("../../Sources/CLI/Commands").standardized.path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".swift") }.map { String($0.dropLast(".swift".count)) }.sorted()
    }()

    @Test func everyFileInCommandsIsListedInFileOrder() {
        #expect(Self.commandFiles.count == 19, "\(Self.commandFiles)")
        #expect(Commands.all.map { String(describing: $0) } == Self.commandFiles.map { $0 + "Command" })
    }

    @Test func theProgramDeclaresExactlyTheListedCommands() {
        #expect(Program.tokenpin.subcommands == Commands.all.map { $0.declaration })
        #expect(Program.tokenpin.subcommands.map(\.name) == Self.commandFiles.map { $0.lowercased() })
    }

    @Test func namesAndAliasesAreUnique() {
        let spellings = Commands.all.flatMap { [$0.declaration.name] + $0.declaration.aliases }
        #expect(spellings.count == Set(spellings).count, "\(spellings)")
        #expect(spellings.count == Commands.all.count + 2, "enroll and unenroll")
        for spelling in spellings {
            #expect(Commands.named(spelling).map { String(describing: $0) } != nil, "\(spelling)")
        }
        #expect(Commands.named("enroll").map { String(describing: $0) } == "EnrolCommand")
        #expect(Commands.named("frobnicate") == nil)
    }

    @Test func everyCommandIsInADeclaredGroupAndEveryGroupHasOne() {
        for command in Commands.all {
            #expect(
                command.declaration.group.map(CommandGroup.all.contains) == true,
                "\(command.declaration.name): \(command.declaration.group ?? "no group")")
        }
        for group in CommandGroup.all {
            #expect(Commands.all.contains { $0.declaration.group == group }, "\(group) is empty")
        }
        #expect(Program.tokenpin.subcommandGroups.map(\.title) == CommandGroup.all)
    }

    /// What each command line makes; with `--user`, root's reset is the administrator's.
    static let made: [([String], String)] = [
        (["enrol"], "EnrolCommand"), (["enroll"], "EnrolCommand"), (["verify"], "VerifyCommand"),
        (["derive", "ssh:work", "--fd", "3"], "DeriveCommand"), (["age", "identity"], "AgeCommand"),
        (["change"], "ChangeCommand"), (["types"], "TypesCommand"), (["toggle", "token", "on"], "ToggleCommand"),
        (["readers"], "ReadersCommand"), (["token", "change-pin"], "TokenCommand"), (["status"], "StatusCommand"),
        (["reset"], "ResetCommand"),
        (["--user", "alice", "reset"], geteuid() == 0 ? "AdministratorResetCommand" : "ResetCommand"),
        (["unenrol"], "UnenrolCommand"), (["unenroll"], "UnenrolCommand"), (["doctor"], "DoctorCommand"),
        (["import"], "ImportCommand"), (["watch"], "WatchCommand"), (["help", "verify"], "HelpCommand"),
        (["completions", "bash"], "CompletionsCommand"),
    ]

    @Test(arguments: made)
    func makeCommandMakesTheDeclaredCommand(argv: [String], expected: String) throws {
        let parsed = try ArgumentParser.parse(argv)
        let made = try #require(try makeCommand(parsed, program: CLIProgram()))
        #expect(String(describing: type(of: made)) == expected)
    }

    @Test func everyCommandTokenpinRunsIsMadeAbove() {
        let covered = Set(Self.made.compactMap { $0.0.first { !$0.hasPrefix("-") && $0 != "alice" } })
        let declared = Set(Commands.all.map { $0.declaration.name }).subtracting(BenchHandOver.commands)
        #expect(declared.isSubset(of: covered), "\(declared.subtracting(covered))")
    }

    @Test(arguments: [["bench", "--iterations", "3"], ["demo"]])
    func benchAndDemoAreMadeByTheExecutableAndHandedOverByTokenpin(argv: [String]) throws {
        let parsed = try ArgumentParser.parse(argv)
        // tokenpin runs neither: reached without the hand-over, the command line is refused, saying who runs it.
        #expect(throws: UsageError.self) { try makeCommand(parsed, program: CLIProgram()) }
        do {
            _ = try makeCommand(parsed, program: CLIProgram())
        } catch {
            #expect(error.message == "'\(argv[0])' is not run by this program; tokenpin-bench runs it")
            #expect(error.command == argv[0])
        }
        // tokenpin-bench's program makes its own command; a help for the name stands in for it here.
        let program = CLIProgram(makeCommand: { parsed throws(UsageError) in HelpCommand(topic: parsed.command) })
        let made = try makeCommand(parsed, program: program) as? HelpCommand
        #expect(made?.topic == argv[0])
        #expect(BenchHandOver.reason(parsed) == "`tokenpin \(argv[0])`")
        #expect(BenchHandOver.commands == ["bench", "demo"])
    }

    /// The traits that choose the mode and the configuration, each on the commands it always applied to.
    @Test func traitsAreOnTheCommandsTheyNamed() throws {
        func having(_ trait: CommandTraits) -> Set<String> {
            Set(Commands.all.filter { $0.traits.contains(trait) }.map { $0.declaration.name })
        }
        #expect(having(.recordless) == ["help", "completions", "demo"])
        #expect(having(.readOnly) == ["status", "types", "readers", "watch"])
        #expect(having(.bothSides) == ["import", "doctor"])
        #expect(having(.readsConfigurationItself) == ["doctor"])
        #expect(Commands.traits(of: try ArgumentParser.parse(["unenroll"])) == [])
        #expect(Commands.traits(of: ParsedCommandLine()) == [])
    }

    @Test func theCommandsHandedOverAreDeclared() {
        let names = Set(Commands.all.map { $0.declaration.name })
        #expect(BenchHandOver.commands.isSubset(of: names), "\(BenchHandOver.commands.subtracting(names))")
    }
}
