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
public final class PKCS11Helper {
    /// Where its modules come from.
    public let source: PKCS11ModuleSource
    /// How long each request may take.
    public let timeoutMilliseconds: Int
    /// How long a login through the token's protected authentication path (a keypad) may take.
    public var protectedPathTimeoutMilliseconds = 60_000
    /// The modules the helper loaded (p11-kit's names, or the path).
    public let modules: [String]
    /// The time from spawning the helper to its `ready`, in nanoseconds (the helper's start cost).
    public let startNanoseconds: UInt64
    /// The PKCS#11 calls the helper made for the last request.
    public internal(set) var lastCalls = 0
    /// The PKCS#11 calls the helper made to load and initialize its modules.
    public let startCalls: Int

    private var socket: FileDescriptor?
    private let process: ChildProcess
    /// Why the helper is gone, once it is.
    private var ended: PKCS11TokenError?

    /// The default time a request may take: a token behind pcscd answers a login and a key operation in well under
    /// a second, a slow card in a few.
    public static let defaultTimeoutMilliseconds = 15_000

    private init(
        source: PKCS11ModuleSource, timeout: Int, socket: consuming FileDescriptor, process: ChildProcess,
        modules: [String], startNanoseconds: UInt64, startCalls: Int
    ) {
        self.source = source
        self.timeoutMilliseconds = timeout
        self.socket = .some(socket)
        self.process = process
        self.modules = modules
        self.startNanoseconds = startNanoseconds
        self.startCalls = startCalls
    }

    deinit { stop() }

    // MARK: Starting and stopping

    /// Where the helper is looked for when none is named: next to the running executable (the build directory, or
    /// `bin/`), then `../libexec/tokenpin/` from it, then `/usr/libexec/tokenpin/` and `/usr/local/libexec/tokenpin/`.
    public static var executableCandidates: [String] {
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
    /// - Throws: `.helperFailed` when it cannot start or cannot load the modules; `.notAnswering` when loading takes
    ///   past the timeout (it is killed).
    public static func start(
        module: PKCS11ModuleSource, timeout: Int = defaultTimeoutMilliseconds, executable: String? = nil,
        environment: [String]? = nil, standardError: Int32? = nil
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
                startNanoseconds: MonotonicClock.nanoseconds - began, startCalls: calls)
        case .failure(let error, _):
            Self.reap(process)
            throw error
        default:
            Self.reap(process)
            throw .helperFailed("the PKCS#11 helper did not say it was ready")
        }
    }

    /// Asks the helper to finalize its modules and end, and reaps it; kills it when it has not ended within a second.
    /// Calling it again does nothing.
    public func stop() {
        guard let socket = socket.take() else { return }
        if ended == nil { try? HelperRequest.quit.encode().send(on: socket) }
        try? socket.close()
        Self.reap(process)
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
            return .helperFailed("the PKCS#11 helper \(how) while \(activity)")
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
        guard let socket = socket.take() else { throw .helperFailed("the PKCS#11 helper was stopped") }
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

    /// Every token present with its usable keys, each marked whether `uri` matches it (all, with none).
    ///
    /// - Throws: `.invalidRequest` for a URI that does not parse or names a PIN; `.malformed` when a module
    ///   answered something impossible.
    public func inventory(uri: String? = nil) throws(PKCS11TokenError) -> PKCS11Inventory {
        if let uri { _ = try PKCS11URI(parsing: uri) }
        let reply = try exchange(.list(uri: uri))
        switch consume reply {
        case .inventory(let inventory, let calls):
            lastCalls = calls
            return inventory
        case .failure(let error, let calls):
            lastCalls = calls
            throw error
        default:
            throw unexpected("a listing")
        }
    }

    /// The key to use: the only usable key `uri` matches (every usable key, without a URI), as systemd-cryptenroll
    /// chooses.
    ///
    /// - Throws: `.ambiguous` with the URIs of the candidates when more than one fits; `.noToken` when none does,
    ///   saying what was found instead.
    public func selectKey(uri: String? = nil) throws(PKCS11TokenError) -> PKCS11Key {
        try Self.select(from: try inventory(uri: uri), uri: uri, source: source)
    }

    /// The one key of `inventory` that `uri` selects; see `selectKey(uri:)`.
    public static func select(from inventory: PKCS11Inventory, uri: String?, source: PKCS11ModuleSource)
        throws(PKCS11TokenError) -> PKCS11Key
    {
        var candidates = inventory.keys.filter(\.matches).map(\.key)
        // A URI naming a hidden private key's own label (p11tool's, after login) matches with that label left out.
        if candidates.isEmpty { candidates = inventory.looselyMatchedKeys }
        if candidates.count == 1 { return candidates[0] }
        if candidates.count > 1 { throw .ambiguous(candidates.map(\.uri)) }
        var found: [String] = []
        for listing in inventory.listings {
            let keys = listing.keys.isEmpty ? "no key that agrees a secret" : "\(listing.keys.count) usable key(s)"
            found.append(
                "\(listing.token.uri) (\(keys)\(listing.unusable.isEmpty ? "" : "; " + listing.unusable.joined(separator: "; ")))"
            )
        }
        found += inventory.problems
        let wanted = uri.map { "no usable PKCS#11 key matches \($0)" } ?? "no PKCS#11 token with a usable key"
        let place = " (modules: \(source))"
        throw .noToken(
            wanted + place + (found.isEmpty ? "; no token is present" : "; found: " + found.joined(separator: ", ")))
    }

    /// `key` read afresh from its token, with its public half (no login).
    public func refresh(_ key: PKCS11Key) throws(PKCS11TokenError) -> PKCS11Key {
        let reply = try exchange(.key(PKCS11KeyReference(key)))
        switch consume reply {
        case .key(let fresh, let calls):
            lastCalls = calls
            return fresh
        case .failure(let error, let calls):
            lastCalls = calls
            throw error
        default:
            throw unexpected("a key")
        }
    }

    /// The token's description and flags now: its PIN tries hint after a refusal.
    public func status(of key: PKCS11Key) throws(PKCS11TokenError) -> PKCS11TokenInfo {
        let reply = try exchange(.status(PKCS11KeyReference(key)))
        switch consume reply {
        case .token(let token, let calls):
            lastCalls = calls
            return token
        case .failure(let error, let calls):
            lastCalls = calls
            throw error
        default:
            throw unexpected("the token's status")
        }
    }

    /// Logs in with `pin` (nil on a token with a protected authentication path: its keypad asks) and has the key
    /// answer `challenge`: the ECDH secret with the point (`C_DeriveKey`), or the secret an RSA cryptogram holds
    /// (`C_Decrypt`, `expectedLength` bytes). The answer is in guarded memory; the PIN is copied only into guarded
    /// frames, which are wiped.
    ///
    /// - Throws: `.wrongPIN` with the token's tries hint, `.pinLocked`, `.malformed` for an answer of the wrong
    ///   length, `.notAnswering`/`.helperFailed` when the helper hung or crashed.
    public func answer(
        _ key: PKCS11Key, pin: borrowing SecretBytes?, challenge: [UInt8],
        expectedLength: Int = PKCS11Challenge.rsaSecretLength
    ) throws(PKCS11TokenError) -> SecretBytes {
        let reference = PKCS11KeyReference(key)
        let keypad = key.token.flags.contains(.protectedAuthenticationPath)
        let limit = keypad ? max(timeoutMilliseconds, protectedPathTimeoutMilliseconds) : timeoutMilliseconds
        let copy: SecretBytes? =
            switch pin {
            case .some(let pin): keypad ? nil : pin.duplicate()
            case .none: nil
            }
        let request: HelperRequest
        let length: Int
        switch key.algorithm {
        case .ecdh(let curve):
            guard challenge.count == curve.pointLength else {
                throw .invalidRequest("the challenge is not a \(curve.rawValue) point; nothing was sent to the token")
            }
            request = .derive(reference, curve: curve, pin: copy, peerPoint: challenge)
            length = curve.coordinateLength
        case .rsa(let bits, let padding):
            guard challenge.count == bits / 8 else {
                throw .invalidRequest("the challenge is not an RSA \(bits) cryptogram; nothing was sent to the token")
            }
            request = .decrypt(
                reference, padding: padding, pin: copy, cryptogram: challenge, expectedLength: expectedLength)
            length = expectedLength
        }
        let reply = try exchange(request, timeout: limit)
        switch consume reply {
        case .secret(let secret, let calls):
            lastCalls = calls
            guard secret.count == length else {
                throw .malformed("the helper returned a \(secret.count)-byte secret, not \(length) bytes")
            }
            return secret
        case .failure(let error, let calls):
            lastCalls = calls
            throw error
        default:
            throw unexpected("a secret")
        }
    }

    /// Changes the token's user PIN from `current` to `new` (`C_SetPIN`); on a token with a protected
    /// authentication path both are entered on its keypad and the arguments are ignored.
    public func changePIN(_ key: PKCS11Key, current: borrowing SecretBytes, new: borrowing SecretBytes)
        throws(PKCS11TokenError)
    {
        let keypad = key.token.flags.contains(.protectedAuthenticationPath)
        if !keypad, let range = key.token.pinLength, !range.contains(new.count) {
            throw .invalidRequest(
                "the token takes PINs of \(range.lowerBound) to \(range.upperBound) bytes; the new PIN has \(new.count)"
            )
        }
        let request = HelperRequest.setPIN(
            PKCS11KeyReference(key), old: keypad ? SecretBytes(count: 0) : current.duplicate(),
            new: keypad ? SecretBytes(count: 0) : new.duplicate(), keypad: keypad)
        let limit = keypad ? max(timeoutMilliseconds, protectedPathTimeoutMilliseconds) : timeoutMilliseconds
        let reply = try exchange(request, timeout: limit)
        switch consume reply {
        case .done(let calls):
            lastCalls = calls
        case .failure(let error, let calls):
            lastCalls = calls
            throw error
        default:
            throw unexpected("the PIN change's result")
        }
    }

    func unexpected(_ what: String) -> PKCS11TokenError {
        stop()
        let failure = PKCS11TokenError.malformed("the PKCS#11 helper answered something other than \(what)")
        ended = failure
        return failure
    }
}
