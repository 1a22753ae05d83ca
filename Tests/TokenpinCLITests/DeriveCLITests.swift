import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `tokenpin derive`: where the key may go, what refuses before anything is asked, and what a wrong PIN gives.
@Suite struct DeriveCLITests {
    @Test func theKeyGoesToAPipeAFileOrADescriptorTheSameEachTime() throws {
        let cli = CLI()
        try cli.enrol()
        let hex = try cli.run(["derive", "restic", "--format", "hex", "--pin-stdin"], input: "482916\n")
        #expect(hex.status == 0, "\(hex.stderr)")
        #expect(hex.stdout.count == 65 && hex.stdout.hasSuffix("\n"), "\(hex.stdout)")
        let key = String(hex.stdout.dropLast())
        let allHex = key.allSatisfy { $0.isHexDigit }
        #expect(allHex)
        #expect(hex.stderr.isEmpty, "messages never share standard output with the key: \(hex.stderr)")

        let file = cli.directory + "/restic.key"
        let written = try cli.run(["derive", "restic", "--output", file, "--pin-stdin"], input: "482916\n")
        #expect(written.status == 0, "\(written.stderr)")
        let raw = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(raw.count == 32, "raw has no newline")
        #expect(raw.map { String(format: "%02x", $0) }.joined() == key)
        var info = stat()
        stat(file, &info)
        #expect(info.st_mode & 0o777 == 0o600)

        let base64 = try cli.run(
            ["derive", "restic", "--format", "base64", "--pin-stdin"], input: "482916\n")
        #expect(Data(base64Encoded: String(base64.stdout.dropLast())).map { [UInt8]($0) } == raw)

        let viaFD = try cli.run(
            [], input: "482916\n",
            shell: "tokenpin derive restic --format hex --fd 7 --pin-stdin 7>\(cli.directory)/fd.key")
        #expect(viaFD.status == 0, "\(viaFD.stderr)")
        #expect(try String(contentsOfFile: cli.directory + "/fd.key", encoding: .utf8) == key + "\n")

        let other = try cli.run(["derive", "ssh:work", "--format", "hex", "--pin-stdin"], input: "482916\n")
        #expect(other.status == 0 && other.stdout != hex.stdout, "one key per application")
        #expect(cli.remaining == 5)
    }

    @Test func aWrongPINWritesNothingAndCounts() throws {
        let cli = CLI()
        try cli.enrol()
        let file = cli.directory + "/wrong.key"
        let wrong = try cli.run(["derive", "restic", "--output", file, "--pin-stdin"], input: "000001\n")
        #expect(wrong.status == 1, "\(wrong.stderr)")
        #expect(!FileManager.default.fileExists(atPath: file), "the file made for the key is removed")
        let piped = try cli.run(["derive", "restic", "--pin-stdin"], input: "000002\n")
        #expect(piped.status == 1 && piped.stdout.isEmpty)
        #expect(piped.stderr.contains("Wrong PIN"), "\(piped.stderr)")
        #expect(cli.remaining == 3)
    }

    @Test func refusalsComeBeforeThePromptAndCountNothing() throws {
        let cli = CLI()
        try cli.enrol()
        let existing = cli.directory + "/existing"
        try "keep me\n".write(toFile: existing, atomically: true, encoding: .utf8)
        let onto = try cli.run(["derive", "restic", "--output", existing, "--pin-stdin"], input: "000001\n")
        #expect(onto.status == 74, "\(onto.stderr)")
        #expect(onto.stderr.contains("it exists"))
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "keep me\n")

        let terminal = try cli.run(
            [], input: "000001\n",
            shell: "script -qec 'tokenpin derive restic --pin-stdin' /dev/null")
        #expect(terminal.status == 2, "\(terminal.stdout) \(terminal.stderr)")
        #expect(terminal.stdout.contains("standard output is a terminal"))

        let closed = try cli.run(["derive", "restic", "--fd", "9", "--pin-stdin"], input: "000001\n")
        #expect(closed.status == 2 && closed.stderr.contains("not open"), "\(closed.stderr)")
        let json = try cli.run(["--json", "derive", "restic", "--pin-stdin"], input: "000001\n")
        #expect(json.status == 2, "\(json.stdout)")
        #expect(cli.remaining == 5, "no refusal above read or counted a PIN")
    }

    @Test(arguments: [
        ["derive"], ["derive", "Restic"], ["derive", "../x"], ["derive", "-x"],
        ["derive", String(repeating: "a", count: 65)],
        ["derive", "a b"], ["derive", "tokenpin:login-keyring"], ["derive", "tokenpin:x"],
        ["derive", "restic", "--fd", "3", "--output", "/tmp/x"], ["derive", "restic", "--fd", "x"],
        ["derive", "restic", "--fd", "0"], ["derive", "restic", "--format", "pem"], ["derive", "restic", "extra"],
    ])
    func badCommandLinesAreUsageErrors(arguments: [String]) throws {
        let cli = CLI()
        let result = try cli.run(arguments + ["--pin-stdin"], input: "482916\n")
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func theKeyOutlivesAChangeAndDiesWithTheRecord() throws {
        let cli = CLI()
        try cli.enrol()
        let before = try cli.run(["derive", "age", "--format", "hex", "--pin-stdin"], input: "482916\n").stdout
        #expect(try cli.run(["change", "--pin-stdin"], input: "482916\n739154\n739154\n").status == 0)
        #expect(try cli.run(["derive", "age", "--format", "hex", "--pin-stdin"], input: "739154\n").stdout == before)
        #expect(try cli.run(["unenrol", "--pin-stdin"], input: "739154\n").status == 0)
        try cli.enrol()
        let after = try cli.run(["derive", "age", "--format", "hex", "--pin-stdin"], input: "482916\n")
        #expect(after.status == 0 && after.stdout != before)
    }
}

@Suite(.enabled(if: TestDaemon.isAvailable)) struct DeriveDaemonCLITests {
    static let nobody = getpwnam("nobody").map { $0.pointee.pw_uid } ?? 65534

    @Test func throughTokenpindTheKeyIsTheRecordsAndOnlyItsOwnersToAsk() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli, config: "enrol-auth = none\n")
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        let first = try cli.run(socket + ["derive", "restic", "--format", "hex", "--pin-stdin"], input: "482916\n")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.count == 65)
        let again = try cli.run(socket + ["derive", "restic", "--format", "hex", "--pin-stdin"], input: "482916\n")
        #expect(again.stdout == first.stdout)
        let wrong = try cli.run(socket + ["derive", "restic", "--pin-stdin"], input: "000001\n")
        #expect(wrong.status == 1 && wrong.stdout.isEmpty)

        // Another user asking for root's key is refused before anything is asked or counted.
        let asNobody = try cli.run(
            [], input: "482916\n",
            shell: "exec setpriv --reuid=\(Self.nobody) --regid=\(Self.nobody) --clear-groups -- "
                + "tokenpin --socket \(daemon.socket) --user root derive restic --pin-stdin")
        #expect(asNobody.status == 77, "\(asNobody.stdout) \(asNobody.stderr)")
        #expect(asNobody.stdout.isEmpty)
        let status = try cli.run(socket + ["--json", "status"])
        #expect(status.json["remaining"] as? Int == 4, "only the wrong PIN above counted: \(status.stdout)")
        daemon.stop()
    }
}
