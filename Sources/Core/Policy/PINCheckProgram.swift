import FoundationEssentials
internal import TokenpinSystem

/// The site's own check of a new PIN (`pin-check = PROGRAM`): a program run after the built-in policy.
///
/// The program gets the candidate PIN on standard input (its bytes, then a newline) and nothing else: no
/// arguments, a minimal environment (`PATH` and `LC_ALL=C`), standard error to `/dev/null`. Exit 0 accepts;
/// exit 1 refuses, with the first line of its standard output as the reason. Anything else (another exit
/// status, a signal, no answer within `timeoutMilliseconds`, a program that cannot be run) is a configuration
/// error: the site's check cannot say yes or no, so no PIN is set.
///
/// The PIN bytes go from guarded memory straight into the pipe before the program starts (a PIN is far
/// smaller than a pipe's buffer), so no copy is made in ordinary memory and a program that never reads its
/// input cannot block tokenpin or make it write to a closed pipe.
public struct PINCheckProgram: Sendable, Equatable {
    /// The program's absolute path.
    public var path: String
    /// How long the program may run before it is killed (with its process group) and the check fails.
    public var timeoutMilliseconds: Int
    /// The most bytes of standard output kept; more is read and dropped.
    public static let maximumOutputBytes = 4096
    /// The longest reason shown, in characters.
    public static let maximumReasonLength = 200
    /// The timeout when the configuration does not set one.
    public static let defaultTimeoutMilliseconds = 5000

    /// A check of `path`, killed after `timeoutMilliseconds`.
    public init(path: String, timeoutMilliseconds: Int = PINCheckProgram.defaultTimeoutMilliseconds) {
        self.path = path
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// What the program said about a PIN.
    public enum Verdict: Sendable, Equatable {
        /// Exit status 0.
        case accepted
        /// Exit status 1, with the first line of its output (or a generic sentence when it printed none).
        case refused(reason: String)
    }

    /// Runs the program on `pin` and returns its verdict; throws when it gives none.
    ///
    /// The PIN is written from its guarded memory into a pipe; tokenpin keeps no other copy.
    public func check(_ pin: borrowing PIN) throws(PINCheckError) -> Verdict {
        try checkProgramFile()
        let input = try Self.pipe()
        // Written before the program starts: the read end is open here, so the write cannot fail on a closed
        // pipe, and a PIN (at most a few hundred bytes) fits the pipe's buffer, so it cannot block.
        do {
            try pin.secret.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws(Errno) in
                try input.writeEnd.writeAll(bytes)
            }
            try input.writeEnd.writeAll([0x0A])
        } catch {
            throw PINCheckError(.io, "pin-check: cannot pass the PIN to \(path): \(error)")
        }
        let inputRead = input.keepingReadEnd()
        let output = try Self.pipe()
        let child = try spawn(stdin: inputRead.rawValue, stdout: output.writeEnd.rawValue)
        _ = consume inputRead
        let outputRead = output.keepingReadEnd()
        let deadline = MonotonicClock.milliseconds + timeoutMilliseconds
        let said = Self.readOutput(outputRead, until: deadline)
        let ended: ChildProcess.Termination?
        do {
            ended = try child.waitForExit(timeoutMilliseconds: max(0, deadline - MonotonicClock.milliseconds))
        } catch {
            throw PINCheckError(.io, "pin-check: lost track of \(path): \(error)")
        }
        guard let ended else {
            // Not reaped yet, so its process group cannot be another's: stop it with everything it started.
            child.kill()
            while (try? child.waitForExit(timeoutMilliseconds: 1000)) == .some(nil) {}
            throw PINCheckError(
                .timeout,
                "pin-check: \(path) did not answer within \(Self.seconds(timeoutMilliseconds)); it was stopped")
        }
        switch ended {
        case .signaled(let signal):
            throw PINCheckError(
                .signal, "pin-check: \(path) was killed by signal \(signal) (\(Self.signalName(signal)))")
        case .exited(0): return .accepted
        case .exited(1): return .refused(reason: Self.reason(from: said, pin: pin))
        case .exited(let exitStatus):
            throw PINCheckError(
                .exitStatus,
                "pin-check: \(path) exited with status \(exitStatus); it must exit 0 (accept) or 1 (refuse)")
        }
    }

    /// Refuses a program tokenpin should not run: a relative path, a missing or non-executable file, or one that
    /// someone other than its owner (root or this user) could change or replace (its directory).
    func checkProgramFile() throws(PINCheckError) {
        guard path.hasPrefix("/") else {
            throw PINCheckError(.notAbsolute, "pin-check must name a program by its absolute path, not `\(path)`")
        }
        let info: FileStatus
        do {
            info = try FileStatus.of(path)
        } catch {
            throw PINCheckError(.unusable, "pin-check: \(path): \(error)")
        }
        guard info.isRegularFile else {
            throw PINCheckError(.unusable, "pin-check: \(path) is not a regular file")
        }
        guard CurrentProcess.mayExecute(path) else {
            throw PINCheckError(.unusable, "pin-check: \(path) is not executable")
        }
        guard info.owner == 0 || info.owner == UInt32(CurrentProcess.effectiveUserID) else {
            throw PINCheckError(.unusable, "pin-check: \(path) belongs to uid \(info.owner); it must belong to root")
        }
        guard !info.isWritableByGroupOrOthers else {
            throw PINCheckError(.unusable, "pin-check: \(path) is writable by group or others (chmod go-w)")
        }
        // Nor may others swap the file: its directory is theirs to write only when the sticky bit stops renames.
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        let folder: FileStatus
        do {
            folder = try FileStatus.of(directory.isEmpty ? "/" : directory)
        } catch {
            throw PINCheckError(.unusable, "pin-check: \(directory): \(error)")
        }
        guard !folder.isWritableByGroupOrOthers || folder.isSticky else {
            throw PINCheckError(.unusable, "pin-check: \(path) is in a directory others can write (\(directory))")
        }
    }

    /// Starts the program: no shell, no arguments but its name, a minimal environment, its own process group,
    /// default signal handling, `stdin` and `stdout` as standard input and output, standard error to /dev/null,
    /// and no other descriptor.
    private func spawn(stdin: Int32, stdout: Int32) throws(PINCheckError) -> ChildProcess {
        var options = ChildProcess.Options()
        options.environment = ["PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"]
        options.standardInput = stdin
        options.standardOutput = stdout
        options.newProcessGroup = true
        do {
            // A program file just written may be busy for a moment (ETXTBSY): up to 20 tries.
            return try ChildProcess.spawn(path, options, textBusyRetries: 19)
        } catch {
            throw PINCheckError(.unusable, "pin-check: cannot run \(path): \(error)")
        }
    }

    /// Reads the program's output until end of file or `deadline`, keeping the first `maximumOutputBytes` and
    /// dropping the rest.
    ///
    /// The output is kept in guarded memory, as a secret: a careless program may echo the PIN.
    private static func readOutput(_ descriptor: borrowing FileDescriptor, until deadline: Int) -> SecretBytes {
        let buffer = SecretBytes(count: maximumOutputBytes)
        let scratch = SecretBytes(count: 1024)
        var kept = 0
        while true {
            let left = deadline - MonotonicClock.milliseconds
            guard left > 0 else { break }
            do {
                guard try descriptor.waitForInput(timeoutMilliseconds: Int32(clamping: left)) else { break }
            } catch  where error == .interrupted {
                continue
            } catch {
                break
            }
            let room = maximumOutputBytes - kept
            let count: Int
            if room > 0 {
                count =
                    (try? buffer.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) throws(Errno) in
                        try descriptor.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[kept...]))
                    }) ?? 0
                kept += count
            } else {
                count =
                    (try? scratch.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) throws(Errno) in
                        try descriptor.read(into: raw)
                    }) ?? 0
            }
            guard count > 0 else { break }
        }
        return buffer.prefix(kept)
    }

    /// The first line of `output`, cleaned of control characters and shortened; never the PIN itself.
    ///
    /// Only a line that does not contain the PIN becomes a `String`.
    static func reason(from output: borrowing SecretBytes, pin: borrowing PIN) -> String {
        let generic = "refused by the site's PIN check"
        let text: String? = output.withUnsafeBytes { raw in
            let end = raw.firstIndex { $0 == 0x0A || $0 == 0x0D } ?? raw.count
            let line = UnsafeRawBufferPointer(rebasing: raw[..<end])
            // A program that echoes the PIN must not put it into a message, a log or JSON.
            let echoes = pin.secret.withUnsafeBytes { (secret: UnsafeRawBufferPointer) -> Bool in
                guard !secret.isEmpty, line.count >= secret.count else { return false }
                return (0...(line.count - secret.count)).contains { start in
                    secret.indices.allSatisfy { line[start + $0] == secret[$0] }
                }
            }
            return echoes ? nil : String(decoding: line, as: UTF8.self)
        }
        guard let text else { return generic }
        let printable = text.unicodeScalars.filter {
            $0.value >= 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value)
        }
        let cleaned = String(String.UnicodeScalarView(printable)).trimmingBlanks()
        guard !cleaned.isEmpty else { return generic }
        return cleaned.count > maximumReasonLength ? String(cleaned.prefix(maximumReasonLength)) + "…" : cleaned
    }

    /// A pipe, both ends close-on-exec.
    private static func pipe() throws(PINCheckError) -> PipeEnds {
        do {
            return try PipeEnds.make()
        } catch {
            throw PINCheckError(.io, "pin-check: cannot make a pipe: \(error)")
        }
    }

    private static func seconds(_ milliseconds: Int) -> String {
        milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }

    /// The signals a check program is usually ended by, by name; any other as "a crash or a kill".
    private static func signalName(_ signal: Int32) -> String {
        let name = ChildProcess.signalName(signal)
        let named: Set = ["SIGKILL", "SIGSEGV", "SIGABRT", "SIGTERM", "SIGBUS", "SIGILL", "SIGFPE"]
        return named.contains(name) ? name : "a crash or a kill"
    }
}

/// Why the site's PIN check gave no verdict; every case is a configuration error (exit 78).
public struct PINCheckError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable {
        /// The configured path is not absolute.
        case notAbsolute = "not-absolute"
        /// The program is missing, not executable, not a file, or writable by others; or it could not start.
        case unusable
        /// It exited with a status other than 0 or 1.
        case exitStatus = "exit-status"
        /// A signal ended it (a crash).
        case signal
        /// It ran past the timeout and was killed.
        case timeout
        /// A pipe could not be made or written.
        case io
    }

    /// What went wrong, for tests and logs.
    public var code: Code
    /// A sentence for the administrator.
    public var detail: String

    /// Creates an error.
    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { detail }
}
