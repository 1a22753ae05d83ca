package import TokenpinCore

/// Why an operation did not complete. Expected outcomes (a wrong PIN, a lock) are values, not errors.
package enum ServiceError: Error, Sendable, Equatable {
    /// No record for the user.
    case notEnrolled(user: String, path: String)
    /// `enrol` on a user who has a record.
    case alreadyEnrolled(user: String, path: String)
    /// A new PIN broke a rule.
    case policyViolation(PolicyRule)
    /// The site's `pin-check` program refused a new PIN (rule `site-check`), giving `reason`.
    case siteCheckRefused(reason: String)
    /// The store refused or failed.
    case store(StoreError)
    /// The person cancelled.
    case cancelled
    /// A primitive failed (Argon2id out of memory, say).
    case crypto(CryptoError)
    /// `toggle pin off`: the PIN type is always on.
    case pinAlwaysEnabled
    /// A typed recovery key that is not one (wrong length, letters, checksum): not counted.
    case malformedRecoveryKey(String)
    /// The token type is not available (no reader, no card, not the enrolled card, not usable).
    case tokenUnavailable(String)
    /// The token is not enabled for this user.
    case tokenNotEnabled
    /// The token is already enabled.
    case tokenAlreadyEnabled(serial: String)
    /// A service tokenpin needs is not running (pcscd, the daemon).
    case serviceUnavailable(String)
    /// Reading input failed (standard input closed before all lines were read).
    case input(String)
    /// Settings that cannot work.
    case configuration(String)
    /// The card refused an operation (wrong admin PIN, blocked) in a way that is not a PIN outcome.
    case cardRefused(String)
    /// Permission denied (another user's record).
    case permissionDenied(String)
    /// The request cannot be carried out as asked (several cards and no way to choose).
    case usage(String)
    /// A lock or the memory budget did not free up in time (another operation for the same user is running, or
    /// the daemon is saturated); nothing was counted. Try again.
    case busy(String)
    /// The login password asked before a first way in (`enrol`, `import` through the daemon) was wrong.
    case passwordRejected(String)
    /// What was typed at a PIN prompt cannot be the PIN under the policy (`what`: the shape a PIN has here, "6 to
    /// 32 digits"): a password, a paste. It was not tried and nothing was counted.
    case notAPIN(String)
    /// A new card PIN the card cannot take (its length), said with what it takes; nothing reached the card.
    case cardPINRefused(String)
    /// Another program holds the card exclusively (`why` names it and what to do): the token is unavailable.
    case cardHeldElsewhere(String)
    /// The login-password check is throttled after a wrong password (or one runs already for this user): try
    /// again in `seconds`; PAM was not run and nothing was counted.
    case passwordDelayed(seconds: Int)
    /// tokenpind does not answer this kind of attempt (a remote login with `pam-remote = ignore`): nothing was
    /// asked, and a PAM stack goes on to its next module.
    case ignored(String)

    /// A sentence for the user.
    package var message: String {
        switch self {
        case .notEnrolled(let user, let path):
            "no PIN is enrolled for \(user) (looked in \(path)); run `tokenpin enrol`"
        case .alreadyEnrolled(let user, let path):
            "a PIN is already enrolled for \(user) (\(path)); use `tokenpin change`, or `tokenpin reset` with the recovery key"
        case .policyViolation(let rule): "PIN refused: \(rule.explanation) (rule \(rule.rawValue))"
        case .siteCheckRefused(let reason): "PIN refused: \(reason) (rule \(PolicyRule.siteCheck.rawValue))"
        case .store(let error): error.description
        case .cancelled: "cancelled"
        case .crypto(let error): error.description
        case .pinAlwaysEnabled: "the PIN type is always enabled and cannot be switched off"
        case .malformedRecoveryKey(let why): "that is not a recovery key: \(why); nothing was counted"
        case .tokenUnavailable(let why): "token unavailable: \(why)"
        case .tokenNotEnabled: "the token type is not enabled; run `tokenpin toggle token on`"
        case .tokenAlreadyEnabled(let serial):
            "the token type is already enabled (card \(serial)); switch it off first to bind another card"
        case .serviceUnavailable(let why): why
        case .input(let why): why
        case .configuration(let why): why
        case .cardRefused(let why): why
        case .permissionDenied(let why): why
        case .usage(let why): why
        case .busy(let why): "busy: \(why); nothing was counted, try again"
        case .passwordRejected(let why): why
        case .notAPIN(let shape):
            "what was typed cannot be the PIN (a PIN here is \(shape)), so it was not tried; nothing was counted"
        case .cardPINRefused(let why): "new card PIN refused: \(why)"
        case .cardHeldElsewhere(let why): "token unavailable: \(why)"
        case .passwordDelayed(let seconds):
            "a login password was refused a moment ago: try again in \(seconds) s (PAM was not run, nothing was counted)"
        case .ignored(let why): why
        }
    }

    /// The stable code used in JSON (`error.code`) and by the daemon protocol.
    package var code: String {
        switch self {
        case .notEnrolled: "not-enrolled"
        case .alreadyEnrolled: "already-enrolled"
        case .policyViolation, .siteCheckRefused: "policy"
        case .store(let error): "store-" + error.code.rawValue
        case .cancelled: "cancelled"
        case .crypto: "crypto"
        case .pinAlwaysEnabled: "pin-always-enabled"
        case .malformedRecoveryKey: "malformed-recovery-key"
        case .tokenUnavailable: "token-unavailable"
        case .tokenNotEnabled: "token-not-enabled"
        case .tokenAlreadyEnabled: "token-already-enabled"
        case .serviceUnavailable: "service-unavailable"
        case .input: "input"
        case .configuration: "configuration"
        case .cardRefused: "card-refused"
        case .permissionDenied: "permission-denied"
        case .usage: "usage"
        case .busy: "busy"
        case .passwordRejected: "password-rejected"
        case .notAPIN: "not-a-pin"
        case .cardPINRefused: "card-pin-policy"
        case .cardHeldElsewhere: "token-unavailable"
        case .passwordDelayed: "delayed"
        case .ignored: "ignored"
        }
    }
}

/// tokenpin's exit codes: the one table the CLI, the docs and the daemon protocol share.
package enum ExitCode: Int32, Sendable, CaseIterable {
    /// Success.
    case success = 0
    /// Not verified: a wrong PIN, a wrong recovery key, a refused operation.
    case notVerified = 1
    /// Usage: unknown command or option, missing argument, an operation that is not allowed as asked.
    case usage = 2
    /// The PIN is locked (no tries left), or a failure delay is running.
    case locked = 3
    /// No PIN is enrolled.
    case notEnrolled = 4
    /// A new PIN broke the policy.
    case policy = 5
    /// The token is unavailable: no reader, no card, not the enrolled card, not usable.
    case tokenUnavailable = 6
    /// Bad data: a corrupt, truncated or foreign record, an unknown format version.
    case dataError = 65
    /// A service tokenpin needs is not running (pcscd, the daemon).
    case serviceUnavailable = 69
    /// An I/O error.
    case ioError = 74
    /// Permission denied, or a store others can write.
    case permissionDenied = 77
    /// Bad configuration.
    case configuration = 78
    /// A library loaded when first needed cannot be loaded: OpenSSL's libcrypto.so.3, for the card's algorithms.
    ///
    /// Not thrown: Sources/C/COpenSSL/libcrypto.c ends the process with it, as the dynamic linker does (127) for a
    /// library missing at start.
    case libraryMissing = 127
    /// Cancelled by the person.
    case cancelled = 130

    /// What the code means, for `tokenpin help` and the docs.
    package var meaning: String {
        switch self {
        case .success: "success"
        case .notVerified: "not verified (wrong PIN or recovery key, card refused)"
        case .usage: "usage error, or an operation that is not allowed"
        case .locked: "PIN locked, or a failure delay is running"
        case .notEnrolled: "no PIN enrolled"
        case .policy: "new PIN refused by the PIN policy"
        case .tokenUnavailable: "token unavailable (no reader, no card, not the enrolled card)"
        case .dataError: "bad data (corrupt or foreign store, unknown version)"
        case .serviceUnavailable: "a service it needs is not running (pcscd, the daemon)"
        case .ioError: "I/O error"
        case .permissionDenied: "permission denied, or an insecure store"
        case .configuration: "bad configuration"
        case .libraryMissing: "a library it needs cannot be loaded (libcrypto.so.3, for the card's algorithms)"
        case .cancelled: "cancelled"
        }
    }

    /// The exit code for an error.
    package init(_ error: ServiceError) {
        switch error {
        case .notEnrolled: self = .notEnrolled
        case .alreadyEnrolled: self = .usage
        case .policyViolation, .siteCheckRefused: self = .policy
        case .store(let store):
            switch store.code {
            case .corrupt, .unknownVersion: self = .dataError
            case .insecure, .permissionDenied: self = .permissionDenied
            case .io: self = .ioError
            case .invalidUser: self = .usage
            case .busy: self = .serviceUnavailable
            }
        case .cancelled: self = .cancelled
        case .crypto: self = .ioError
        case .pinAlwaysEnabled: self = .usage
        case .malformedRecoveryKey: self = .notVerified
        case .tokenUnavailable: self = .tokenUnavailable
        case .tokenNotEnabled: self = .tokenUnavailable
        case .tokenAlreadyEnabled: self = .usage
        case .serviceUnavailable: self = .serviceUnavailable
        case .input: self = .ioError
        case .configuration: self = .configuration
        case .cardRefused: self = .notVerified
        case .permissionDenied: self = .permissionDenied
        case .usage: self = .usage
        case .busy: self = .serviceUnavailable
        case .passwordRejected: self = .notVerified
        case .notAPIN: self = .notVerified
        case .cardPINRefused: self = .policy
        case .cardHeldElsewhere: self = .tokenUnavailable
        case .passwordDelayed: self = .locked
        case .ignored: self = .permissionDenied
        }
    }
}
