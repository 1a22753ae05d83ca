import Foundation
import Testing
import TokenpinTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the built `tokenpin` binary with a private HOME, store and config, as a user would.
///
/// The store and the configuration are the user's own, found through `XDG_STATE_HOME` and `XDG_CONFIG_HOME`, not
/// named with `--store` and `--config`: those flags mean local mode, so a run through a test's tokenpind
/// (`--socket`) must not carry them.
struct CLI {
    let directory: String
    var store: String { directory + "/state/tokenpin" }
    var config: String { directory + "/xdg/tokenpin/tokenpin.conf" }

    /// A fresh sandbox with a fast KDF (tests measure behaviour, not cost).
    init(config: String = "") {
        // Open to others: some tests run the CLI as another user (setpriv), and it must read the configuration.
        directory = temporaryDirectory("cli", mode: 0o755)
        for path in ["/home", "/xdg/tokenpin", "/state"] {
            try! FileManager.default.createDirectory(atPath: directory + path, withIntermediateDirectories: true)
        }
        try! ("kdf-memory-mib = 8\nkdf-passes = 1\n" + config).write(
            toFile: self.config, atomically: true, encoding: .utf8)
    }

    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["TOKENPIN_BIN"] { return path }
        return Bundle.main.bundleURL.appendingPathComponent("tokenpin").path
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        /// The JSON object on stdout.
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any]) ?? [:]
        }
    }

    /// Runs `tokenpin ARGS` with the sandbox's store and configuration (`plain`: without them) and `input` on
    /// standard input (`executable`: `setsid`, to run it without a controlling terminal).
    @discardableResult
    func run(
        _ arguments: [String], input: String? = nil, plain: Bool = false, environment: [String: String] = [:],
        executable: String? = nil, shell: String? = nil
    ) throws -> Result {
        let process = start(
            arguments, input: input, plain: plain, environment: environment, executable: executable, shell: shell)
        return try process.finish()
    }

    /// `shell`: run this command line through `/bin/sh -c` instead, with the binary's directory first on `PATH`
    /// (a suggested `tokenpin …` command as printed).
    func start(
        _ arguments: [String], input: String? = nil, plain: Bool = false, environment: [String: String] = [:],
        executable: String? = nil, shell: String? = nil
    ) -> Running {
        let process = Process()
        var args = arguments
        if let shell {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            args = ["-c", shell]
        } else if let executable {
            process.executableURL = URL(fileURLWithPath: executable)
            args = ["--wait", CLI.binary] + args
        } else {
            process.executableURL = URL(fileURLWithPath: CLI.binary)
        }
        process.arguments = args
        var env = [
            "HOME": directory + "/home", "XDG_CONFIG_HOME": directory + (plain ? "/plain-xdg" : "/xdg"),
            "XDG_STATE_HOME": directory + (plain ? "/plain-state" : "/state"), "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            // No unit or package on the test machine makes tokenpind expected (debug builds read this list).
            "TOKENPIN_DAEMON_MARKERS": directory + "/no-daemon-marker",
        ]
        if shell != nil { env["PATH"] = (CLI.binary as NSString).deletingLastPathComponent + ":/usr/bin:/bin" }
        env.merge(environment) { $1 }
        process.environment = env
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try! process.run()
        if let input { Self.writeIgnoringBrokenPipe(stdin.fileHandleForWriting, Data(input.utf8)) }
        try? stdin.fileHandleForWriting.close()
        return Running(process: process, stdout: stdout, stderr: stderr)
    }

    /// Writes `data`; a command that refused early (a usage error) and exited without reading makes the write
    /// fail with EPIPE instead of killing the test runner with SIGPIPE. SIGPIPE is blocked on this thread only,
    /// around the write, so no child inherits an ignored SIGPIPE.
    static func writeIgnoringBrokenPipe(_ handle: FileHandle, _ data: Data) {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        try? handle.write(contentsOf: data)
        var pending = sigset_t()
        sigpending(&pending)
        if sigismember(&pending, SIGPIPE) == 1 {
            var now = timespec()
            _ = sigtimedwait(&pipeSignal, nil, &now)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }

    /// A started command. `waitForLine` reads ahead on one of its outputs; `finish` returns everything, the lines
    /// read ahead included.
    final class Running {
        let process: Process
        let stdout: Pipe
        let stderr: Pipe
        /// What `waitForLine` has read so far, per output.
        private var readAhead: [Output: [UInt8]] = [:]

        enum Output: Hashable {
            case stdout, stderr
        }

        init(process: Process, stdout: Pipe, stderr: Pipe) {
            self.process = process
            self.stdout = stdout
            self.stderr = stderr
        }

        /// Waits until the command has written a whole line containing `text` on `output` and returns it; nil when
        /// the output closed first or `seconds` went by (a bound for a broken run, not a measurement). Used to wait
        /// for a signal (`watch`'s subscription line) instead of sleeping.
        func waitForLine(containing text: String, on output: Output = .stderr, seconds: Int = 30) -> String? {
            let fd = (output == .stdout ? stdout : stderr).fileHandleForReading.fileDescriptor
            let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds) * 1_000_000_000
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let lines = String(decoding: readAhead[output, default: []], as: UTF8.self).split(
                    separator: "\n", omittingEmptySubsequences: false
                ).dropLast()  // the last piece has no newline yet
                if let line = lines.first(where: { $0.contains(text) }) { return String(line) }
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else { return nil }
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let polled = poll(&ready, 1, Int32((deadline - now) / 1_000_000) + 1)
                if polled < 0 && errno == EINTR { continue }
                guard polled > 0 else { return nil }
                let count = read(fd, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return nil }
                readAhead[output, default: []] += chunk[..<count]
            }
        }

        func finish() throws -> Result {
            let out = readAhead[.stdout, default: []] + stdout.fileHandleForReading.readDataToEndOfFile()
            let err = readAhead[.stderr, default: []] + stderr.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Result(
                status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
                stderr: String(decoding: err, as: UTF8.self))
        }
    }

    /// Enrols `pin` and returns the recovery key (written to a file by `--recovery-key-file`).
    @discardableResult
    func enrol(_ pin: String = "482916") throws -> String {
        let keyFile = directory + "/recovery-\(UUID().uuidString)"
        let result = try run(["enrol", "--pin-stdin", "--recovery-key-file", keyFile], input: "\(pin)\n\(pin)\n")
        #expect(result.status == 0, "enrol failed: \(result.stderr)")
        return (try? String(contentsOfFile: keyFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            ?? ""
    }

    /// The record on disk, decoded (in either record format).
    var record: [String: Any] {
        let user = String(cString: getpwuid(geteuid())!.pointee.pw_name)
        return RecordFiles.object(atPath: store + "/\(user).json") ?? [:]
    }

    var remaining: Int? { (record["counter"] as? [String: Any])?["remaining"] as? Int }
}
