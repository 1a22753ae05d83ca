import Foundation
import Testing
import TokenpinTestSupport

/// `tokenpin completions SHELL`: scripts each shell accepts, offering what the help declares.
@Suite struct CompletionsTests {
    static let shells: [(name: String, path: String)] = [
        ("bash", "/bin/bash"), ("zsh", "/usr/bin/zsh"), ("fish", "/usr/bin/fish"),
    ]

    /// Runs `shell -n` on `script`: the shell's own syntax check.
    func syntaxCheck(_ shell: String, _ script: String) throws -> (Int32, String) {
        let directory = temporaryDirectory("completion")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/script"
        try script.write(toFile: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: shell)
        process.arguments = ["-n", file]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    @Test(arguments: shells.map(\.name))
    func eachShellAcceptsItsScript(shell: String) throws {
        let result = try CLI().run(["completions", shell], plain: true)
        #expect(result.status == 0, "\(result.stderr)")
        for word in ["enrol", "verify", "bench", "completions", "method", "recovery-key-file", "pin-stdin"] {
            #expect(
                result.stdout.contains(
                    shell == "fish" ? word : word.replacingOccurrences(of: "method", with: "--method")),
                "\(shell) offers \(word)")
        }
        let path = try #require(Self.shells.first { $0.name == shell }?.path)
        guard FileManager.default.isExecutableFile(atPath: path) else { return }  // the shell is not installed here
        let (status, output) = try syntaxCheck(path, result.stdout)
        #expect(status == 0, "\(shell) -n: \(output)")
    }

    @Test func bashCompletesCommandsAndValues() throws {
        let script = try CLI().run(["completions", "bash"], plain: true).stdout
        func complete(_ words: [String]) throws -> [String] {
            let line = words.map { "'\($0)'" }.joined(separator: " ")
            let probe =
                script
                + "\nCOMP_WORDS=(\(line)); COMP_CWORD=\(words.count - 1); _tokenpin; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", probe]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return output.split(separator: "\n").map(String.init)
        }
        #expect(try complete(["tokenpin", "ver"]) == ["verify"])
        #expect(try complete(["tokenpin", "verify", "--method", ""]) == ["pin", "token"])
        #expect(try complete(["tokenpin", "--json", "toggle", "t"]) == ["token"])
        #expect(try complete(["tokenpin", "completions", "z"]) == ["zsh"])
        // The command line's context (issue 25): each argument's own words, by position.
        #expect(try complete(["tokenpin", "toggle", ""]) == ["pin", "token"])
        #expect(try complete(["tokenpin", "toggle", "token", ""]) == ["on", "off"])
        #expect(try complete(["tokenpin", "--store", "/tmp/s", "toggle", "token", ""]) == ["on", "off"])
        #expect(try complete(["tokenpin", "token", ""]) == ["change-pin", "unblock"])
        let after = try complete(["tokenpin", "toggle", "token", "on", ""])
        #expect(after.contains("--generate-key") && !after.contains("pin") && !after.contains("off"), "\(after)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/fish")))
    func fishFollowsTheContextToo() throws {
        let script = try CLI().run(["completions", "fish"], plain: true).stdout
        let directory = temporaryDirectory("completion")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try script.write(toFile: directory + "/tokenpin.fish", atomically: true, encoding: .utf8)
        func complete(_ line: String) throws -> [String] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/fish")
            process.arguments = ["--no-config", "-c", "source \(directory)/tokenpin.fish; complete -C '\(line)'"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return output.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }.sorted()
        }
        #expect(try complete("tokenpin toggle ") == ["pin", "token"])
        #expect(try complete("tokenpin toggle token ") == ["off", "on"])
        #expect(try complete("tokenpin --reader sim toggle pin ") == ["off", "on"])
    }

    @Test func anUnknownShellIsUsage() throws {
        let result = try CLI().run(["completions", "tcsh"], plain: true)
        #expect(result.status == 2 && result.stderr.contains("bash, zsh, fish"))
    }
}
