import TokenpinCore
import TokenpinSystem

/// The helper's side: the `tokenpin-pkcs11` process that loads the PKCS#11 modules, so that none ever runs inside
/// tokenpind, the CLI or a PAM login.
///
/// Its standard input is the one socket to its client (standard output and error are `/dev/null` unless the client
/// says otherwise, so nothing a module prints can reach the protocol); it inherits no other descriptor. It loads the
/// modules its arguments name, says `ready` (or why not), then answers one request at a time until `quit` or the end
/// of the socket, and ends with `_exit` after finalizing the modules: some modules' exit-time destructors crash
/// (SoftHSM with OpenSSL 3), and a crash after the last answer must cost nothing.
package enum PKCS11HelperServer {
    /// The helper's arguments: `--p11-kit` (every module p11-kit is configured to load) or `--module PATH`.
    package static func source(arguments: [String]) -> PKCS11ModuleSource? {
        switch arguments.count {
        case 1 where arguments[0] == "--p11-kit": .p11kit
        case 2 where arguments[0] == "--module" && arguments[1].hasPrefix("/"): .path(arguments[1])
        default: nil
        }
    }

    /// The arguments that make the helper load `source`.
    static func arguments(for source: PKCS11ModuleSource) -> [String] {
        switch source {
        case .p11kit: ["--p11-kit"]
        case .path(let path): ["--module", path]
        }
    }

    /// Runs the helper on the socket `socket` (its standard input): loads `source`, answers until the client quits or
    /// goes, and ends the process.
    package static func run(source: PKCS11ModuleSource, socket: consuming FileDescriptor) -> Never {
        let tokens: PKCS11Tokens
        do {
            tokens = try PKCS11Tokens.load(source)
        } catch {
            try? HelperReply.failure(.helperFailed(error.detail), calls: 0).encode().send(on: socket)
            CurrentProcess.exitImmediately(3)
        }
        do {
            try HelperReply.ready(modules: tokens.modules.map(\.name), calls: tokens.calls).encode().send(on: socket)
        } catch {
            end(tokens, status: 4)
        }
        while true {
            let request: HelperRequest
            do {
                let frame = try HelperWire.receive(from: socket, deadline: nil)
                request = try HelperRequest.decode(frame)
            } catch  where error.code == .closed {
                end(tokens, status: 0)
            } catch {
                try? HelperReply.failure(
                    .invalidRequest("the helper could not read the request: \(error.detail)"), calls: 0
                )
                .encode().send(on: socket)
                end(tokens, status: 5)
            }
            if request.isQuit { end(tokens, status: 0) }
            let reply = perform(request, tokens)
            do {
                try reply.encode().send(on: socket)
            } catch {
                end(tokens, status: 4)
            }
        }
    }

    /// Finalizes the modules and ends the process at once.
    private static func end(_ tokens: PKCS11Tokens, status: Int32) -> Never {
        tokens.finalize()
        CurrentProcess.exitImmediately(status)
    }

    /// Performs one request and replies with the number of PKCS#11 calls it made: what the helper does with each
    /// request it reads, and what `PKCS11Helper.inProcess` does with each it is asked.
    static func perform(_ request: consuming HelperRequest, _ tokens: PKCS11Tokens) -> HelperReply {
        let before = tokens.calls
        let reply = answer(request, tokens)
        return reply(tokens.calls - before)
    }

    /// Performs one request; the reply takes the number of calls it made.
    private static func answer(_ request: consuming HelperRequest, _ tokens: PKCS11Tokens) -> (Int) -> HelperReply {
        do throws(PKCS11TokenError) {
            switch consume request {
            case .list(let uri):
                let inventory = try tokens.list(uri: uri)
                return { .inventory(inventory, calls: $0) }
            case .key(let reference):
                let key = try tokens.key(reference)
                return { .key(key, calls: $0) }
            case .derive(let reference, let curve, let pin, let point):
                let secret = try tokens.derive(reference, curve: curve, pin: pin, peerPoint: point)
                return SecretReply(secret).reply
            case .decrypt(let reference, let padding, let pin, let cryptogram, let expected):
                let secret = try tokens.decrypt(
                    reference, padding: padding, pin: pin, cryptogram: cryptogram, expectedLength: expected)
                return SecretReply(secret).reply
            case .setPIN(let reference, let old, let new, let keypad):
                try tokens.setPIN(reference, old: old, new: new, keypad: keypad)
                return { .done(calls: $0) }
            case .status(let reference):
                let token = try tokens.status(reference)
                return { .token(token, calls: $0) }
            case .presence(let reference):
                let token = try tokens.presence(reference)
                return { .token(token, calls: $0) }
            case .quit:
                return { .done(calls: $0) }
            }
        } catch {
            return { .failure(error, calls: $0) }
        }
    }
}

/// Hands a secret to the reply once: a closure cannot capture a non-copyable value, a class can own it.
private final class SecretReply {
    private var secret: SecretBytes?

    init(_ secret: consuming SecretBytes) { self.secret = .some(secret) }

    func reply(_ calls: Int) -> HelperReply {
        guard let secret = secret.take() else {
            return .failure(.helperFailed("the secret was sent twice"), calls: calls)
        }
        return .secret(secret, calls: calls)
    }
}
