import Foundation
import Testing

/// One-character relative paths (`--store s`, `--recovery-key-file k`) once trapped in Foundation's path code.
@Suite struct ShortRelativePathTests {
    @Test func aOneCharacterStoreAndRecoveryFileWork() throws {
        let cli = CLI()
        func run(_ arguments: [String]) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLI.binary)
            process.arguments = ["--local", "--config", cli.config] + arguments
            process.currentDirectoryURL = URL(fileURLWithPath: cli.directory)
            process.environment = ["HOME": cli.directory + "/home", "PATH": "/usr/bin:/bin"]
            let input = Pipe()
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            CLI.writeIgnoringBrokenPipe(input.fileHandleForWriting, Data("482916\n482916\n".utf8))
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
            return process.terminationStatus
        }
        #expect(try run(["--store", "s", "enrol", "--pin-stdin", "--recovery-key-file", "k"]) == 0)
        #expect(FileManager.default.fileExists(atPath: cli.directory + "/s"))
        #expect(try run(["--store", "t", "enrol", "--pin-stdin", "--recovery-key-file", "k"]) == 74, "k exists")
    }
}
