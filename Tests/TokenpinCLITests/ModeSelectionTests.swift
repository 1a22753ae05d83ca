import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 25, item 1: a flag that names a local resource means local mode or is refused naming `--local`, never
/// dropped; talking to tokenpind is said; a daemon that should run here and does not is exit 69, not local mode.
@Suite struct ModeSelectionTests {
    /// A socket path nobody listens on: naming it chooses the daemon without one running.
    static func deadSocket(_ cli: CLI) -> String { cli.directory + "/no-daemon.sock" }

    @Test(arguments: [
        ["--store", "/tmp/tokenpin-somewhere", "enrol"],
        ["--state-dir", "/tmp/tokenpin-somewhere", "status"],
        ["--reader", "sim", "toggle", "token", "on", "--generate-key"],
    ])
    func aLocalFlagWithTheDaemonsSocketIsRefusedNamingLocal(arguments: [String]) throws {
        let cli = CLI()
        let result = try cli.run(["--socket", Self.deadSocket(cli), "--pin-stdin"] + arguments, input: "739164\n")
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--local"), "\(result.stderr)")
        #expect(result.stderr.contains("talks to tokenpind"), "\(result.stderr)")
    }

    @Test func aLocalFlagWithUserIsRefused() throws {
        let cli = CLI()
        let result = try cli.run(["--store", cli.store, "--user", "nobody", "status"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--store"), "\(result.stderr)")
    }

    @Test func localAndSocketContradictEachOther() throws {
        let cli = CLI()
        let result = try cli.run(["--local", "--socket", Self.deadSocket(cli), "status"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--local never talks to tokenpind"), "\(result.stderr)")
    }

    @Test func aConfigFileWithStoreSettingsIsRefusedThroughTheDaemon() throws {
        let cli = CLI()
        let storeSettings = cli.directory + "/store-settings.conf"
        try "color = never\nretries-max = 3\n".write(toFile: storeSettings, atomically: true, encoding: .utf8)
        let refused = try cli.run(["--socket", Self.deadSocket(cli), "--config", storeSettings, "status"])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("sets retries-max (line 2)"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--local"), "\(refused.stderr)")
        // With --local the same file is a local store's settings.
        let local = try cli.run(["--local", "--config", storeSettings, "--json", "status"])
        #expect(local.status == 0, "\(local.stderr)")
        // Colours and prompts are the CLI's own: they go with it to the daemon.
        let appearance = cli.directory + "/appearance.conf"
        try "color = never\nprompt-pin = Your PIN\n".write(toFile: appearance, atomically: true, encoding: .utf8)
        let through = try cli.run(["--socket", Self.deadSocket(cli), "--config", appearance, "status"])
        #expect(through.status == 69, "the daemon was asked (and is not there): \(through.stderr)")
    }

    @Test func aDaemonExpectedHereButNotReachableIsSixtyNine() throws {
        let cli = CLI()
        let unit = cli.directory + "/tokenpind.socket"
        try "[Socket]\n".write(toFile: unit, atomically: true, encoding: .utf8)
        let expected = ["TOKENPIN_DAEMON_MARKERS": "/nonexistent:" + unit]
        for arguments in [["status"], ["verify", "--pin-stdin"], ["enrol", "--pin-stdin"]] {
            let result = try cli.run(arguments, input: "739164\n739164\n", environment: expected)
            #expect(result.status == 69, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("tokenpind is not running"), "\(result.stderr)")
            #expect(result.stderr.contains(unit), "names what says it should run: \(result.stderr)")
            #expect(result.stderr.contains("--local"), "\(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: cli.store), "nothing went local")
        let local = try cli.run(["--local", "--json", "status"], environment: expected)
        #expect(local.status == 0, "\(local.stderr)")
        #expect(local.json["backend"] as? String == "local")
        // --store means local mode by itself.
        let store = try cli.run(["--store", cli.store, "status"], environment: expected)
        #expect(store.status == 0, "\(store.stderr)")
        #expect(store.stdout.contains("Service:    local (--store"), "\(store.stdout)")
    }

    @Test func statusSaysWhereTheRecordIsServed() throws {
        let cli = CLI()
        let local = try cli.run(["status"])
        #expect(local.status == 0)
        #expect(local.stdout.contains("Service:    local"), "\(local.stdout)")
        #expect(try cli.run(["--json", "status"]).json["backend"] as? String == "local")
    }
}

@Suite(.enabled(if: TestDaemon.isAvailable)) struct ModeSelectionDaemonTests {
    @Test func statusSaysThroughTokenpind() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli)
        let status = try cli.run(["--socket", daemon.socket, "status"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("Service:    through tokenpind (socket \(daemon.socket))"), "\(status.stdout)")
        let json = try cli.run(["--socket", daemon.socket, "--json", "status"])
        #expect(json.json["backend"] as? String == "tokenpind")
        #expect(json.json["socket"] as? String == daemon.socket)
        let enrol = try cli.run(["--socket", daemon.socket, "enrol", "--pin-stdin"], input: "739164\n739164\n")
        #expect(enrol.stdout.contains("through tokenpind"), "\(enrol.stdout)")
    }

    @Test func importTakesTheLocalStoreAndTheDaemonTogether() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli)
        let local = cli.directory + "/own-store"
        #expect(try cli.run(["--store", local, "enrol", "--pin-stdin"], input: "739164\n739164\n").status == 0)
        let moved = try cli.run(["--socket", daemon.socket, "--store", local, "--json", "import"])
        #expect(moved.status == 0, "\(moved.stdout) \(moved.stderr)")
        #expect(try cli.run(["--socket", daemon.socket, "verify", "--pin-stdin"], input: "739164\n").status == 0)
    }
}
