internal import CTokenpinShims
import FoundationEssentials
internal import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

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
        let inputEnds = try Self.pipe()
        let inputRead = FileDescriptor(owning: inputEnds.read)
        let inputWrite = FileDescriptor(owning: inputEnds.write)
        // Written before the program starts: the read end is open here, so the write cannot fail on a closed
        // pipe, and a PIN (at most a few hundred bytes) fits the pipe's buffer, so it cannot block.
        do {
            try pin.secret.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws(Errno) in
                try inputWrite.writeAll(bytes)
            }
            try inputWrite.writeAll([0x0A])
        } catch {
            throw PINCheckError(.io, "pin-check: cannot pass the PIN to \(path): \(error)")
        }
        try? inputWrite.close()
        let outputEnds = try Self.pipe()
        let outputRead = FileDescriptor(owning: outputEnds.read)
        let outputWrite = FileDescriptor(owning: outputEnds.write)
        let pid = try spawn(stdin: inputRead.rawValue, stdout: outputWrite.rawValue)
        try? inputRead.close()
        try? outputWrite.close()
        let deadline = Self.monotonicMilliseconds() + timeoutMilliseconds
        let output = Self.readOutput(outputRead, until: deadline)
        guard let status = try wait(for: pid, until: deadline) else {
            // Not reaped yet, so its process group cannot be another's: stop it with everything it started.
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
            _ = Self.waitBlocking(pid)
            throw PINCheckError(
                .timeout,
                "pin-check: \(path) did not answer within \(Self.seconds(timeoutMilliseconds)); it was stopped")
        }
        let signal = status & 0x7F
        guard signal == 0 else {
            throw PINCheckError(
                .signal, "pin-check: \(path) was killed by signal \(signal) (\(Self.signalName(signal)))")
        }
        let exitStatus = (status >> 8) & 0xFF
        switch exitStatus {
        case 0: return .accepted
        case 1: return .refused(reason: Self.reason(from: output, pin: pin))
        default:
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
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw PINCheckError(.unusable, "pin-check: \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw PINCheckError(.unusable, "pin-check: \(path) is not a regular file")
        }
        guard access(path, X_OK) == 0 else {
            throw PINCheckError(.unusable, "pin-check: \(path) is not executable")
        }
        guard info.st_uid == 0 || info.st_uid == geteuid() else {
            throw PINCheckError(.unusable, "pin-check: \(path) belongs to uid \(info.st_uid); it must belong to root")
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw PINCheckError(.unusable, "pin-check: \(path) is writable by group or others (chmod go-w)")
        }
        // Nor may others swap the file: its directory is theirs to write only when the sticky bit stops renames.
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        var folder = stat()
        guard stat(directory.isEmpty ? "/" : directory, &folder) == 0 else {
            throw PINCheckError(.unusable, "pin-check: \(directory): \(String(cString: strerror(errno)))")
        }
        guard folder.st_mode & (S_IWGRP | S_IWOTH) == 0 || folder.st_mode & S_ISVTX != 0 else {
            throw PINCheckError(.unusable, "pin-check: \(path) is in a directory others can write (\(directory))")
        }
    }

    /// Starts the program: no shell, no arguments but its name, a minimal environment, its own process group,
    /// default signal handling, `stdin` and `stdout` as standard input and output, standard error to /dev/null,
    /// and no other descriptor.
    private func spawn(stdin: Int32, stdout: Int32) throws(PINCheckError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        tokenpin_spawn_close_from(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        let environment = ["PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"]
        var pid: pid_t = 0
        var result: Int32 = 0
        // ETXTBSY: a file just written may still be open for writing in a child another thread is starting
        // (until that child's exec closes it); it clears within moments.
        for attempt in 0..<20 {
            if attempt > 0 { usleep(10_000) }
            result = Self.withCStrings([path]) { arguments in
                Self.withCStrings(environment) { variables in
                    posix_spawn(&pid, path, &actions, &attributes, arguments, variables)
                }
            }
            if result != ETXTBSY { break }
        }
        guard result == 0 else {
            throw PINCheckError(.unusable, "pin-check: cannot run \(path): \(String(cString: strerror(result)))")
        }
        return pid
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
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else { break }
            var poller = pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(clamping: left))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { break }
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

    /// The wait status of `pid` once it ends, or nil when it is still running at `deadline`.
    private func wait(for pid: pid_t, until deadline: Int) throws(PINCheckError) -> Int32? {
        while true {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return status }
            if result < 0 && errno != EINTR {
                throw PINCheckError(.io, "pin-check: lost track of \(path): \(String(cString: strerror(errno)))")
            }
            guard Self.monotonicMilliseconds() < deadline else { return nil }
            usleep(2000)
        }
    }

    private static func waitBlocking(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
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
                guard let needle = secret.baseAddress, let haystack = line.baseAddress, !secret.isEmpty,
                    line.count >= secret.count
                else { return false }
                return (0...(line.count - secret.count)).contains { memcmp(haystack + $0, needle, secret.count) == 0 }
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

    /// A pipe's raw ends, both close-on-exec; the caller takes ownership.
    private static func pipe() throws(PINCheckError) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard tokenpin_pipe_cloexec(&ends) == 0 else {
            throw PINCheckError(.io, "pin-check: cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        return (ends[0], ends[1])
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer {
            for pointer in pointers { free(pointer) }
        }
        return body(pointers)
    }

    private static func monotonicMilliseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec * 1000 + now.tv_nsec / 1_000_000
    }

    private static func seconds(_ milliseconds: Int) -> String {
        milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }

    private static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGKILL: "SIGKILL"
        case SIGSEGV: "SIGSEGV"
        case SIGABRT: "SIGABRT"
        case SIGTERM: "SIGTERM"
        case SIGBUS: "SIGBUS"
        case SIGILL: "SIGILL"
        case SIGFPE: "SIGFPE"
        default: "a crash or a kill"
        }
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
