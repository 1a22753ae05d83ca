internal import CTokenpinShims

#if canImport(Glibc)
    import Glibc
#endif

/// The two connected ends of a Unix stream socket pair, both close-on-exec.
package struct SocketPair: ~Copyable {
    /// One end.
    package var first: FileDescriptor
    /// The other end.
    package var second: FileDescriptor

    /// A new connected pair of Unix stream sockets; neither end survives an `exec`.
    ///
    /// The corresponding C function is `socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC)`.
    package static func stream() throws(Errno) -> SocketPair {
        var ends: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &ends) == 0 else { throw Errno.current }
        return SocketPair(first: FileDescriptor(owning: ends[0]), second: FileDescriptor(owning: ends[1]))
    }

    /// Closes the second end (given to a child, which has its own copy now) and returns the first.
    package consuming func keepingFirst() -> FileDescriptor {
        let first = first
        _ = consume second
        return first
    }
}

/// The two ends of a pipe, both close-on-exec.
package struct PipeEnds: ~Copyable {
    /// The end to read from.
    package var readEnd: FileDescriptor
    /// The end to write to.
    package var writeEnd: FileDescriptor

    /// A new pipe; neither end survives an `exec` (a child gets one through `ChildProcess.Options`).
    ///
    /// The corresponding C function is `pipe2(O_CLOEXEC)`.
    package static func make() throws(Errno) -> PipeEnds {
        var ends: [Int32] = [-1, -1]
        guard tokenpin_pipe_cloexec(&ends) == 0 else { throw Errno.current }
        return PipeEnds(readEnd: FileDescriptor(owning: ends[0]), writeEnd: FileDescriptor(owning: ends[1]))
    }

    /// Closes the write end (written to, or given to a child, which has its own copy now) and returns the read end.
    package consuming func keepingReadEnd() -> FileDescriptor {
        let readEnd = readEnd
        _ = consume writeEnd
        return readEnd
    }
}

/// A process this one started, by its ID; reaped through `waitForExit`.
package struct ChildProcess: Sendable, Equatable {
    /// The process ID (also its process group's, when started in a group of its own).
    package let id: Int32
    /// Whether it leads a process group of its own, so that a kill reaches what it started.
    package let ownsProcessGroup: Bool

    /// How a child may be started.
    package struct Options: Sendable {
        /// `argv[1...]`; `argv[0]` is the path.
        package var arguments: [String] = []
        /// The whole environment, `NAME=value` strings; nothing else is inherited.
        package var environment: [String] = []
        /// The descriptor (of this process) the child gets as standard input; nil: `/dev/null`.
        package var standardInput: Int32?
        /// The descriptor the child gets as standard output; nil: `/dev/null`.
        package var standardOutput: Int32?
        /// The descriptor the child gets as standard error; nil: `/dev/null`.
        package var standardError: Int32?
        /// Starts the child in a process group of its own (`kill(group:)` then stops all it started).
        package var newProcessGroup = true

        /// Options with nothing set: no arguments, an empty environment, `/dev/null` on 0, 1 and 2.
        package init() {}
    }

    /// How a child ended.
    package enum Termination: Sendable, Equatable, CustomStringConvertible {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signaled(Int32)

        package var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signaled(let signal): "killed by signal \(signal) (\(ChildProcess.signalName(signal)))"
            }
        }
    }

    /// Starts `path` with `options`: no shell, default signal handling and an empty signal mask, standard input,
    /// output and error as given (else `/dev/null`) and no other descriptor of this process.
    ///
    /// The corresponding C functions are `posix_spawn`, `posix_spawn_file_actions_adddup2`,
    /// `posix_spawn_file_actions_addclosefrom_np` and `posix_spawnattr_setpgroup`.
    ///
    /// `textBusyRetries`: how many more times to try, 10 ms apart, while the file is still open for writing in
    /// some process (`ETXTBSY`: a program just written, whose descriptor a child another thread is starting holds
    /// until its own `exec`).
    package static func spawn(_ path: String, _ options: Options, textBusyRetries: Int = 0) throws(Errno)
        -> ChildProcess
    {
        // The copies `standardSources` makes are closed on every path out: the child has its own by then.
        var copies: [Int32] = []
        defer {
            for copy in copies { _ = Glibc.close(copy) }
        }
        let sources = try standardSources(options, copies: &copies)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        try addStandardDescriptors(sources, to: &actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        setDefaultSignals(&attributes, newProcessGroup: options.newProcessGroup)

        let id = try start(path, options, &actions, &attributes, textBusyRetries: textBusyRetries)
        return ChildProcess(id: id, ownsProcessGroup: options.newProcessGroup)
    }

    /// The descriptors the child gets as standard input, output and error, in that order (nil: `/dev/null`).
    ///
    /// A descriptor below 3 could be overwritten by another dup2 before it is read, or be its own target (which
    /// keeps FD_CLOEXEC on older C libraries): such ones are copied above 2 first, close-on-exec, and each copy is
    /// added to `copies` as soon as it is made, for the caller to close, also when this throws.
    ///
    /// The corresponding C function is `fcntl(F_DUPFD_CLOEXEC)`.
    private static func standardSources(_ options: Options, copies: inout [Int32]) throws(Errno) -> [Int32?] {
        var sources: [Int32?] = []
        for descriptor in [options.standardInput, options.standardOutput, options.standardError] {
            guard let descriptor, descriptor <= 2 else {
                sources.append(descriptor)
                continue
            }
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
            guard copy >= 0 else { throw Errno.current }
            copies.append(copy)
            sources.append(copy)
        }
        return sources
    }

    /// Has the child get `sources` as descriptors 0, 1 and 2 (`/dev/null`, read and write, for nil) and no
    /// descriptor from 3 up.
    ///
    /// The corresponding C functions are `posix_spawn_file_actions_adddup2`, `posix_spawn_file_actions_addopen`
    /// and `posix_spawn_file_actions_addclosefrom_np`.
    private static func addStandardDescriptors(
        _ sources: [Int32?], to actions: inout posix_spawn_file_actions_t
    ) throws(Errno) {
        for (target, source) in sources.enumerated() {
            let result: Int32
            if let source {
                result = posix_spawn_file_actions_adddup2(&actions, source, Int32(target))
            } else {
                result = posix_spawn_file_actions_addopen(&actions, Int32(target), "/dev/null", O_RDWR, 0)
            }
            guard result == 0 else { throw Errno(rawValue: result) }
        }
        let closing = tokenpin_spawn_close_from(&actions, 3)
        guard closing == 0 else { throw Errno(rawValue: closing) }
    }

    /// Has the child start with default handling of every signal and an empty signal mask, and, when
    /// `newProcessGroup`, in a process group of its own.
    ///
    /// The corresponding C functions are `posix_spawnattr_setsigdefault`, `posix_spawnattr_setsigmask`,
    /// `posix_spawnattr_setpgroup` and `posix_spawnattr_setflags`.
    private static func setDefaultSignals(_ attributes: inout posix_spawnattr_t, newProcessGroup: Bool) {
        var defaults = sigset_t()
        sigfillset(&defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        if newProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
    }

    /// Starts `path` with `options`' arguments and environment (as C strings, freed when it returns), `actions`
    /// and `attributes`, trying again 10 ms later, `textBusyRetries` times at most, while the file is busy
    /// (`ETXTBSY`); the child's process ID.
    ///
    /// The corresponding C function is `posix_spawn`.
    private static func start(
        _ path: String, _ options: Options, _ actions: inout posix_spawn_file_actions_t,
        _ attributes: inout posix_spawnattr_t, textBusyRetries: Int
    ) throws(Errno) -> Int32 {
        var pid: Int32 = 0
        var result: Int32 = 0
        for attempt in 0...max(0, textBusyRetries) {
            if attempt > 0 { usleep(10_000) }
            result = withCStrings([path] + options.arguments) { arguments in
                withCStrings(options.environment) { variables in
                    posix_spawn(&pid, path, &actions, &attributes, arguments, variables)
                }
            }
            if result != ETXTBSY { break }
        }
        guard result == 0 else { throw Errno(rawValue: result) }
        return pid
    }

    /// Sends `signal` to the child, and to its whole process group when it leads one.
    ///
    /// Only before the child is reaped: after that its ID may be another process's. The corresponding C function
    /// is `kill`.
    package func kill(_ signal: Int32 = SIGKILL) {
        if ownsProcessGroup { _ = Glibc.kill(-id, signal) }
        _ = Glibc.kill(id, signal)
    }

    /// How the child ended, once it has; nil while it runs. Reaps it.
    ///
    /// The corresponding C function is `waitpid(WNOHANG)`.
    package func termination() throws(Errno) -> Termination? {
        while true {
            var status: Int32 = 0
            let result = waitpid(id, &status, WNOHANG)
            if result == id { return Self.termination(status) }
            if result == 0 { return nil }
            guard errno == EINTR else { throw Errno.current }
        }
    }

    /// Waits at most `timeoutMilliseconds` for the child to end and reaps it; nil when it still runs then.
    ///
    /// Polls (at most every 5 ms), so that a deadline holds whatever the child does. The corresponding C function
    /// is `waitpid(WNOHANG)`.
    package func waitForExit(timeoutMilliseconds: Int) throws(Errno) -> Termination? {
        let deadline = MonotonicClock.milliseconds + timeoutMilliseconds
        var pause = 200  // microseconds, doubled up to 5 ms
        while true {
            if let ended = try termination() { return ended }
            guard MonotonicClock.milliseconds < deadline else { return nil }
            usleep(UInt32(pause))
            pause = min(pause * 2, 5000)
        }
    }

    /// A wait status as a termination.
    static func termination(_ status: Int32) -> Termination {
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
    }

    /// The conventional name of a signal number: `SIGSEGV`, `SIGKILL`; `signal N` for others.
    package static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGHUP: "SIGHUP"
        case SIGINT: "SIGINT"
        case SIGQUIT: "SIGQUIT"
        case SIGILL: "SIGILL"
        case SIGTRAP: "SIGTRAP"
        case SIGABRT: "SIGABRT"
        case SIGBUS: "SIGBUS"
        case SIGFPE: "SIGFPE"
        case SIGKILL: "SIGKILL"
        case SIGSEGV: "SIGSEGV"
        case SIGPIPE: "SIGPIPE"
        case SIGALRM: "SIGALRM"
        case SIGTERM: "SIGTERM"
        case SIGSYS: "SIGSYS"
        default: "signal \(signal)"
        }
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer {
            for pointer in pointers { free(pointer) }
        }
        return body(pointers)
    }
}

extension MonotonicClock {
    /// Milliseconds since an arbitrary fixed point (boot), for deadlines.
    package static var milliseconds: Int { Int(nanoseconds / 1_000_000) }
}

extension CurrentProcess {
    /// The running executable's path, as the kernel knows it; nil when it cannot tell.
    ///
    /// The corresponding C function is `readlink("/proc/self/exe")`.
    package static var executablePath: String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Runs the program at `path` in this process's place, with `arguments` as its argv (the first is its name)
    /// and this process's environment; no shell, no search of PATH. Returns only when that cannot start, with why.
    ///
    /// The corresponding C function is `execv`.
    package static func replace(withProgramAt path: String, arguments: [String]) -> Errno {
        let pointers = arguments.map { strdup($0) } + [nil]
        defer {
            for pointer in pointers { free(pointer) }
        }
        execv(path, pointers)
        return Errno.current
    }

    /// The value of the environment variable `name`; nil when it is not set. Reads that variable alone, without
    /// building a dictionary of the whole environment as `ProcessInfo.environment` does (a start-up cost).
    ///
    /// The corresponding C function is `getenv`.
    package static func environmentValue(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The process's environment, `NAME=value` strings.
    ///
    /// The corresponding C variable is `environ`.
    package static var environment: [String] {
        var variables: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            variables.append(String(cString: entry))
            cursor += 1
        }
        return variables
    }

    /// Ends the process now with `status`: no `atexit` handler, no library destructor, no stream flush.
    ///
    /// For a process whose loaded libraries may crash in their exit-time cleanup. The corresponding C function is
    /// `_exit`.
    package static func exitImmediately(_ status: Int32) -> Never {
        _exit(status)
    }

    /// Has the kernel send `signal` to this process when its parent ends, so that it never outlives it.
    ///
    /// The corresponding C function is `prctl(PR_SET_PDEATHSIG)`.
    package static func endWithParent(signal: Int32 = SIGKILL) throws(Errno) {
        guard tokenpin_parent_death_signal(signal) == 0 else { throw Errno.current }
    }
}
