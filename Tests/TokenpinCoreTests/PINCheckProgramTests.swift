import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

/// Writes an executable `/bin/sh` script with `body` into a fresh private directory and returns its path.
func pinCheckScript(_ body: String, mode: Int = 0o755) -> String {
    let path = temporaryDirectory("pin-check") + "/check"
    try! ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    try! FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    return path
}

/// The site check from the docs: refuses PINs that end in the current year.
let currentYearScript = """
    read -r pin
    year=$(date +%Y)
    case "$pin" in
      *"$year") echo "ends in the current year ($year)"; exit 1 ;;
    esac
    exit 0
    """

let currentYear = String(Calendar(identifier: .gregorian).component(.year, from: Date()))

@Suite struct PINCheckProgramTests {
    @Test func acceptsAndRefusesWithTheProgramsFirstLine() throws {
        let program = PINCheckProgram(path: pinCheckScript(currentYearScript))
        #expect(try program.check(pin("482916")) == .accepted)
        #expect(
            try program.check(pin("739" + currentYear)) == .refused(reason: "ends in the current year (\(currentYear))")
        )
    }

    @Test func thePINArrivesOnStandardInputAlone() throws {
        let program = PINCheckProgram(
            path: pinCheckScript(
                """
                read -r pin
                [ "$pin" = "482916" ] && exit 0
                echo "got something else"; exit 1
                """))
        #expect(try program.check(pin("482916")) == .accepted)
        #expect(try program.check(pin("739154")) == .refused(reason: "got something else"))
    }

    @Test func noArgumentsAndAMinimalEnvironment() throws {
        setenv("TOKENPIN_TEST_LEAK", "leaked", 1)
        defer { unsetenv("TOKENPIN_TEST_LEAK") }
        let program = PINCheckProgram(
            path: pinCheckScript(
                #"echo "args=$# home=${HOME-unset} leak=${TOKENPIN_TEST_LEAK-unset} path=$PATH"; exit 1"#))
        #expect(
            try program.check(pin("482916"))
                == .refused(reason: "args=0 home=unset leak=unset path=/usr/local/bin:/usr/bin:/bin"))
    }

    @Test func aReasonThatEchoesThePINIsReplaced() throws {
        let program = PINCheckProgram(path: pinCheckScript(#"read -r pin; echo "no, $pin is bad"; exit 1"#))
        #expect(try program.check(pin("482916")) == .refused(reason: "refused by the site's PIN check"))
    }

    @Test func noOutputGivesAGenericReasonAndLongOutputIsBounded() throws {
        let silent = PINCheckProgram(path: pinCheckScript("exit 1"))
        #expect(try silent.check(pin("482916")) == .refused(reason: "refused by the site's PIN check"))
        let chatty = PINCheckProgram(path: pinCheckScript("head -c 200000 /dev/zero | tr '\\0' x; exit 1"))
        guard case .refused(let reason) = try chatty.check(pin("482916")) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(reason.count == PINCheckProgram.maximumReasonLength + 1)
    }

    @Test func anotherExitStatusIsAnError() throws {
        let program = PINCheckProgram(path: pinCheckScript("exit 2"))
        #expect(failure(program) == .exitStatus)
    }

    @Test func aCrashIsAnError() throws {
        let program = PINCheckProgram(path: pinCheckScript("kill -SEGV $$"))
        #expect(failure(program) == .signal)
    }

    @Test func aProgramThatRunsTooLongIsKilled() throws {
        let program = PINCheckProgram(path: pinCheckScript("sleep 30; exit 0"), timeoutMilliseconds: 300)
        let start = Date()
        #expect(failure(program) == .timeout)
        #expect(Date().timeIntervalSince(start) < 5)
    }

    @Test func aMissingRelativeOrWritableProgramIsRefused() throws {
        #expect(failure(PINCheckProgram(path: "/nonexistent/pin-check")) == .unusable)
        #expect(failure(PINCheckProgram(path: "bin/pin-check")) == .notAbsolute)
        #expect(failure(PINCheckProgram(path: pinCheckScript("exit 0", mode: 0o775))) == .unusable)
        #expect(failure(PINCheckProgram(path: pinCheckScript("exit 0", mode: 0o644))) == .unusable)
        let swappable = pinCheckScript("exit 0")
        chmod((swappable as NSString).deletingLastPathComponent, 0o777)
        #expect(failure(PINCheckProgram(path: swappable)) == .unusable, "others could rename another file over it")
    }

    @Test func aFileOthersCanChangeMayNotNameTheProgram() throws {
        let file = temporaryDirectory("pin-check-conf") + "/tokenpin.conf"
        try "retries-max = 5\npin-check = /usr/local/sbin/pin-check\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o644)
        #expect(try Configuration.load(files: [], explicitFile: file).pinCheckProgram == "/usr/local/sbin/pin-check")
        chmod(file, 0o664)
        do {
            _ = try Configuration.load(files: [], explicitFile: file)
            Issue.record("a group-writable file named the program")
        } catch {
            #expect(error.file == file && error.line == 2)
            #expect(error.message.contains("others can change"), "\(error.message)")
        }
    }

    @Test func theConfigurationNamesAnAbsoluteProgramAndATimeout() throws {
        var configuration = Configuration()
        try configuration.apply(text: "pin-check = /usr/local/sbin/pin-check\npin-check-timeout = 2\n", file: "c")
        #expect(configuration.pinCheck == PINCheckProgram(path: "/usr/local/sbin/pin-check", timeoutMilliseconds: 2000))
        #expect {
            try configuration.apply(text: "pin-check = pin-check\n", file: "c")
        } throws: { ($0 as? ConfigError).map { $0.line == 1 && $0.message.contains("pin-check") } ?? false }
        #expect {
            try configuration.apply(text: "pin-check-timeout = 0\n", file: "c")
        } throws: { ($0 as? ConfigError).map { $0.line == 1 && $0.message.contains("pin-check-timeout") } ?? false }
        var relative = Configuration()
        do {
            try relative.apply(text: "\npin-check = ./check\n", file: "c")
            Issue.record("a relative path was accepted")
        } catch {
            #expect(error.line == 2)
            #expect(error.message.contains("absolute path"))
        }
    }
}

/// The code of the `PINCheckError` checking `text` throws, or nil when the program gives a verdict (tests say which error was thrown).
private func failure(_ program: PINCheckProgram, _ text: String = "482916") -> PINCheckError.Code? {
    do {
        _ = try program.check(pin(text))
        return nil
    } catch {
        return error.code
    }
}
