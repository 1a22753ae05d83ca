import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The CLI turns core dumps off before it handles a secret (Argon2 working memory and PINs must not land in a core
/// file): checked on the running binary, waiting at the PIN prompt, through `/proc/PID`.
///
/// The child starts with a core limit raised to its hard limit (`prlimit`), so a limit of 0 is the CLI's doing. It
/// runs as `nobody` when the tests run as root, because the files in `/proc/PID` belong to root exactly when the
/// process is not dumpable (`PR_SET_DUMPABLE 0`), which only shows for a process that is not root already.
@Suite struct CoreDumpTests {
    static let nobody: uid_t = 65_534
    static var canRun: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit")
            && (geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"))
    }

    /// The `Max core file size` soft limit in `/proc/PID/limits` (`unlimited` as UInt64.max), or nil.
    func coreLimit(_ pid: pid_t) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Max core file size") })
        else { return nil }
        let soft = line.dropFirst("Max core file size".count).split(separator: " ").first.map(String.init)
        return soft == "unlimited" ? .max : soft.flatMap { UInt64($0) }
    }

    /// The real uid in `/proc/PID/status`, or nil.
    func processUID(_ pid: pid_t) -> uid_t? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") })
        else { return nil }
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { uid_t($0) }
    }

    /// The owner of `/proc/PID/status` (the files in `/proc/PID` follow the dumpable flag when looked up), or nil.
    func procOwner(_ pid: pid_t) -> uid_t? {
        var info = stat()
        return stat("/proc/\(pid)/status", &info) == 0 ? info.st_uid : nil
    }

    /// The process's executable name in `/proc/PID/stat` (after `exec` of the CLI, `tokenpin`).
    func command(_ pid: pid_t) -> String? {
        (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    @Test(.enabled(if: canRun)) func theCLIIsNotDumpableAndHasNoCoreLimitAtThePrompt() throws {
        let cli = CLI()
        // A store directory `nobody` can create its store in.
        let parent = cli.directory + "/open"
        try FileManager.default.createDirectory(
            atPath: parent, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o777])
        chmod(parent, 0o777)
        var hard = rlimit()
        getrlimit(Int32(RLIMIT_CORE.rawValue), &hard)
        let raise = hard.rlim_max == rlim_t.max ? "unlimited" : String(hard.rlim_max)  // RLIM_INFINITY is all ones
        var arguments = ["--core=\(raise):\(raise)", "--"]
        if geteuid() == 0 {
            arguments += [
                "/usr/bin/setpriv", "--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups", "--",
            ]
        }
        arguments += [
            CLI.binary, "--local", "--store", parent + "/store", "--config", cli.config, "enrol", "--pin-stdin",
        ]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        process.arguments = arguments
        process.environment = [
            "HOME": parent, "XDG_CONFIG_HOME": parent + "/xdg", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
        ]
        let stdin = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = FileHandle.nullDevice
        process.standardError = stderr
        try process.run()
        let pid = process.processIdentifier
        defer {
            try? stdin.fileHandleForWriting.close()
            process.waitUntilExit()
        }
        // Wait until the CLI runs (prlimit and setpriv exec it in place) and sits at the prompt: it has taken the
        // record's lock file, and its stdin is an open pipe nothing is written to, so it waits there.
        var limit: UInt64?
        var owner: uid_t?
        for _ in 0..<200 where process.isRunning {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: parent + "/store")) ?? []
            if command(pid) == "tokenpin", files.contains(where: { $0.hasSuffix(".lock") }) {
                limit = coreLimit(pid)
                owner = procOwner(pid)
                break
            }
            usleep(50_000)
        }
        try #require(
            process.isRunning,
            "the CLI ended early: \(String(decoding: stderr.fileHandleForReading.availableData, as: UTF8.self))")
        #expect(limit == 0, "Max core file size is \(limit.map(String.init) ?? "unknown"), not 0")
        let uid = processUID(pid)
        #expect(uid != 0, "the check needs a process that is not root")
        #expect(owner == 0, "/proc/\(pid)/status belongs to \(owner.map(String.init) ?? "?"): the process is dumpable")
    }
}
