import TokenpinCardCrypto
import TokenpinCore
import TokenpinSystem

/// The client of a `tokenpin-pkcs11` helper: the process in which PKCS#11 modules run, so that a module that hangs,
/// crashes or misbehaves cannot take tokenpind, the CLI or a PAM login with it.
///
/// `start` spawns the helper with a socket pair as its standard input and nothing else inherited (no other
/// descriptor, `/dev/null` as standard output and error, its own process group, default signal handling), and waits
/// for it to load the modules. Every request then has `timeoutMilliseconds` to be answered (a login through a
/// keypad `protectedPathTimeoutMilliseconds`); past it the helper is killed with everything it started and the call
/// fails with `.notAnswering`. A helper that crashes or ends is `.helperFailed`, saying how it ended. Either way the
/// helper is gone and every later call fails at once; start a new one to try again.
///
/// PINs go to the helper, and secrets come back, in guarded memory on both sides, and are wiped after use. What the
/// helper answers is checked as strictly as what a module answers: it runs code tokenpin does not trust.
///
/// Not thread-safe: one caller at a time (the token application drives it from one thread).
package final class PKCS11Helper {
    /// Where its modules come from.
    package let source: PKCS11ModuleSource
    /// How long each request may take.
    package let timeoutMilliseconds: Int
    /// How long a login through the token's protected authentication path (a keypad) may take.
    package var protectedPathTimeoutMilliseconds = 60_000
    /// The modules the helper loaded (p11-kit's names, or the path).
    package let modules: [String]
    /// The time from spawning the helper to its `ready`, in nanoseconds (the helper's start cost).
    package let startNanoseconds: UInt64
    /// The PKCS#11 calls the helper made for the last request (added to `counter`).
    package internal(set) var lastCalls = 0 {
        didSet { counter?.add(calls: lastCalls) }
    }
    /// The PKCS#11 calls the helper made to load and initialize its modules.
    package let startCalls: Int
    /// Where the calls and the start cost are counted, if anywhere (`tokenpin bench --token`).
    package let counter: PKCS11CallCounter?

    private var socket: FileDescriptor?
    private let process: ChildProcess?
    /// The modules loaded in this process instead of a helper's (`inProcess`), for the benchmark's bare calls.
    private let local: PKCS11Tokens?
    /// Why the helper is gone, once it is.
    var ended: PKCS11TokenError?

    /// The default time a request may take: a token behind pcscd answers a login and a key operation in well under
    /// a second, a slow card in a few.
    package static let defaultTimeoutMilliseconds = 15_000

    private init(
        source: PKCS11ModuleSource, timeout: Int, socket: consuming FileDescriptor?, process: ChildProcess?,
        local: PKCS11Tokens? = nil, modules: [String], startNanoseconds: UInt64, startCalls: Int,
        counter: PKCS11CallCounter?
    ) {
        self.source = source
        self.timeoutMilliseconds = timeout
        self.socket = socket
        self.process = process
        self.local = local
        self.modules = modules
        self.startNanoseconds = startNanoseconds
        self.startCalls = startCalls
        self.counter = counter
        counter?.started(calls: startCalls, nanoseconds: startNanoseconds)
    }

    deinit { stop() }

    // MARK: Starting and stopping

    /// Where the helper is looked for when none is named: next to the running executable (the build directory, or
    /// `bin/`), then `../libexec/tokenpin/` from it, then `/usr/libexec/tokenpin/` and `/usr/local/libexec/tokenpin/`.
    package static var executableCandidates: [String] {
        var candidates: [String] = []
        if let executable = CurrentProcess.executablePath, let slash = executable.lastIndex(of: "/") {
            let directory = String(executable[..<slash])
            candidates += [directory + "/tokenpin-pkcs11", directory + "/../libexec/tokenpin/tokenpin-pkcs11"]
        }
        return candidates + ["/usr/libexec/tokenpin/tokenpin-pkcs11", "/usr/local/libexec/tokenpin/tokenpin-pkcs11"]
    }

    /// Starts a helper that loads `module` and waits (at most `timeout` milliseconds) until it has loaded it.
    ///
    /// - Parameters:
    ///   - executable: the helper's path; nil looks in `executableCandidates`.
    ///   - environment: the helper's whole environment (`NAME=value`); nil passes this process's on, since modules
    ///     read their configuration from it (`SOFTHSM2_CONF`, `OPENSC_CONF`, p11-kit's `HOME`). A PIN is never in it.
    ///   - standardError: a descriptor for the helper's (and its modules') diagnostics; nil: `/dev/null`.
    ///   - counter: where its calls and its start cost are counted, if anywhere.
    /// - Throws: `.helperFailed` when it cannot start or cannot load the modules; `.notAnswering` when loading takes
    ///   past the timeout (it is killed).
    package static func start(
        module: PKCS11ModuleSource, timeout: Int = defaultTimeoutMilliseconds, executable: String? = nil,
        environment: [String]? = nil, standardError: Int32? = nil, counter: PKCS11CallCounter? = nil
    ) throws(PKCS11TokenError) -> PKCS11Helper {
        if case .path(let path) = module, !path.hasPrefix("/") {
            throw .invalidRequest("a PKCS#11 module is named by its absolute path, not `\(path)`")
        }
        let began = MonotonicClock.nanoseconds
        let pair: SocketPair
        do {
            pair = try SocketPair.stream()
        } catch {
            throw .helperFailed("cannot make the PKCS#11 helper's socket: \(error)")
        }
        var options = ChildProcess.Options()
        options.arguments = PKCS11HelperServer.arguments(for: module)
        // A crash in a module is reported by its signal; the Swift runtime's backtracer would only delay that.
        options.environment =
            (environment ?? CurrentProcess.environment).filter { !$0.hasPrefix("SWIFT_BACKTRACE=") }
            + ["SWIFT_BACKTRACE=enable=no"]
        options.standardInput = pair.second.rawValue
        options.standardError = standardError
        var process: ChildProcess?
        var lastError = Errno.noSuchFileOrDirectory
        let candidates = executable.map { [$0] } ?? executableCandidates
        for candidate in candidates {
            do {
                process = try ChildProcess.spawn(candidate, options)
                break
            } catch {
                lastError = error
                if error != .noSuchFileOrDirectory && error != .permissionDenied { break }
            }
        }
        guard let process else {
            throw .helperFailed(
                "cannot start the PKCS#11 helper (\(candidates.joined(separator: ", "))): \(lastError)")
        }
        let socket = pair.keepingFirst()
        let deadline = MonotonicClock.milliseconds + max(1, timeout)
        let reply: HelperReply
        do {
            reply = try HelperReply.decode(try HelperWire.receive(from: socket, deadline: deadline))
        } catch {
            let problem = Self.failure(error, process: process, activity: "loading \(module)", timeout: timeout)
            throw problem
        }
        switch consume reply {
        case .ready(let modules, let calls):
            return PKCS11Helper(
                source: module, timeout: timeout, socket: socket, process: process, modules: modules,
                startNanoseconds: MonotonicClock.nanoseconds - began, startCalls: calls, counter: counter)
        case .failure(let error, _):
            Self.reap(process)
            throw error
        default:
            Self.reap(process)
            throw .helperFailed("the PKCS#11 helper did not say it was ready")
        }
    }

    /// The same requests answered in this process: `module` loaded here and each request handed to the code the
    /// helper answers it with (`PKCS11HelperServer.perform`), with no process, socket or frame between. The bare
    /// PKCS#11 calls `tokenpin bench --token` times a verify against; nothing else runs a module in a tokenpin
    /// process (one that hangs or crashes takes the process with it). Not bounded by any timeout.
    package static func inProcess(module: PKCS11ModuleSource) throws(PKCS11TokenError) -> PKCS11Helper {
        let began = MonotonicClock.nanoseconds
        let tokens: PKCS11Tokens
        do {
            tokens = try PKCS11Tokens.load(module)
        } catch {
            throw .helperFailed(error.detail)
        }
        return PKCS11Helper(
            source: module, timeout: 0, socket: nil, process: nil, local: tokens, modules: tokens.modules.map(\.name),
            startNanoseconds: MonotonicClock.nanoseconds - began, startCalls: tokens.calls, counter: nil)
    }

    /// Asks the helper to finalize its modules and end, and reaps it; kills it when it has not ended within a second.
    /// Calling it again does nothing. In process: finalizes the modules.
    package func stop() {
        if let local {
            if ended == nil { local.finalize() }
        } else {
            guard let socket = socket.take() else { return }
            if ended == nil { try? HelperRequest.quit.encode().send(on: socket) }
            try? socket.close()
            if let process { Self.reap(process) }
        }
        if ended == nil { ended = .helperFailed("the PKCS#11 helper was stopped") }
    }

    /// Waits a second for the helper to end, then kills it (with its process group) and waits for that.
    private static func reap(_ process: ChildProcess, graceMilliseconds: Int = 1000) {
        if (try? process.waitForExit(timeoutMilliseconds: graceMilliseconds)) ?? nil != nil { return }
        process.kill()
        _ = try? process.waitForExit(timeoutMilliseconds: 5000)
    }

    /// A failure to get an answer, as the error it becomes: the helper killed on a timeout, or how it ended.
    private static func failure(_ error: HelperWireError, process: ChildProcess, activity: String, timeout: Int)
        -> PKCS11TokenError
    {
        switch error.code {
        case .timeout:
            reap(process, graceMilliseconds: 0)
            return .notAnswering(
                "the PKCS#11 module did not answer within \(seconds(timeout)) while \(activity); it was stopped")
        case .closed, .io:
            // It ended (or is ending): say how, waiting briefly for the kernel to report it.
            let termination = (try? process.waitForExit(timeoutMilliseconds: 2000)) ?? nil
            if termination == nil { reap(process, graceMilliseconds: 0) }
            let how = termination.map { "\($0)" } ?? "closed its socket"
            // 127: the helper could not load a library it needs (libp11-kit.so.0 is loaded on its first use).
            let library = termination == .exited(127) ? " (a library it needs, libp11-kit.so.0, is missing)" : ""
            return .helperFailed("the PKCS#11 helper \(how) while \(activity)\(library)")
        default:
            reap(process, graceMilliseconds: 0)
            return .malformed(
                "the PKCS#11 helper sent a message that does not parse while \(activity): \(error.detail)")
        }
    }

    private static func seconds(_ milliseconds: Int) -> String {
        milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }

    // MARK: Requests

    /// Sends `request` and waits for its reply; a timeout or a crash ends the helper for good.
    func exchange(_ request: consuming HelperRequest, timeout: Int? = nil) throws(PKCS11TokenError)
        -> HelperReply
    {
        if let ended { throw ended }
        if let local { return PKCS11HelperServer.perform(request, local) }
        guard let process, let socket = socket.take() else { throw .helperFailed("the PKCS#11 helper was stopped") }
        let activity = request.activity
        let limit = timeout ?? timeoutMilliseconds
        do {
            try request.encode().send(on: socket)
        } catch {
            let failure = Self.failure(
                HelperWireError(.closed, "\(error)"), process: process, activity: activity, timeout: limit)
            ended = failure
            throw failure
        }
        let reply: HelperReply
        do {
            let frame = try HelperWire.receive(from: socket, deadline: MonotonicClock.milliseconds + limit)
            reply = try HelperReply.decode(frame)
        } catch {
            let failure = Self.failure(error, process: process, activity: activity, timeout: limit)
            ended = failure
            throw failure
        }
        self.socket = .some(socket)
        return reply
    }
}
