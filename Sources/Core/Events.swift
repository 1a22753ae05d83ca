/// The authentication types tokenpin knows.
public enum AuthenticationType: String, Codable, Sendable, CaseIterable {
    /// The PIN, verified in software against the vault; always enabled.
    case pin
    /// A hardware token (an OpenPGP card) in a PC/SC reader, the second authentication type.
    case token
}

/// How a verification succeeded.
public enum VerificationMethod: String, Codable, Sendable {
    /// The PIN unwrapped the vault key.
    case pin
    /// The token (card PIN plus the card's key) unwrapped the vault key.
    case token
    /// PIN and token together (`mode = both`).
    case both
    /// The recovery key (`reset`).
    case recovery
    /// No secret of the user's: root, through tokenpind (`reset --user`, `unenrol --user`).
    case administrator
}

/// Something that happened, reported by the CLI, the daemon and the PAM module alike.
///
/// The seeds' delegate callbacks (`didCreatePin`, `didVerifyPin`, `pinControllerDidEnterWrongPin(lastRetry:)`,
/// `pinControllerCouldNotVerifyPin`, `couldNotVerifyTouchID`, `didSelectCancel`) become these cases.
/// No event carries a secret.
public enum Event: Sendable, Equatable {
    /// A PIN was enrolled.
    case created
    /// A verification succeeded.
    case verified(method: VerificationMethod)
    /// The PIN was changed.
    case changed
    /// The recovery key set a new PIN and cleared the lock.
    case reset
    /// A wrong PIN (or recovery key) was entered.
    case wrongPIN(remaining: Int, lastTry: Bool)
    /// The PIN is locked: no tries left.
    case locked
    /// Failures asked for a pause before the next try.
    case delayed(seconds: Int)
    /// The token could not be used; `fallback` says whether the PIN was asked instead, `cardTriesLeft` the card
    /// PIN's tries left as the card reported them (nil when the card was not reached).
    case tokenFailed(reason: String, fallback: Bool, cardTriesLeft: Int? = nil)
    /// The user cancelled.
    case cancelled
    /// A new PIN broke a policy rule; `reason` is the site check's own words (rule `site-check`), else nil.
    case policyViolation(rule: String, reason: String? = nil)
    /// An authentication type was switched on or off.
    case typeChanged(type: AuthenticationType, enabled: Bool)
    /// The record was removed (`unenrol`): the PIN, the recovery key and any token binding.
    case unenrolled
    /// Remote logins or other users (`su`) failed to verify as this user since the user's last own or local
    /// success; told at that success, which clears them.
    case otherAttempts(OtherAttemptsNotice)
    /// The card PIN is to be typed on the keypad of `reader` now (no prompt at the keyboard for it).
    case keypadEntry(reader: String, card: String, triesLeft: Int)
    /// The card's admin or unblocking credential (`credential`: the OpenPGP admin PIN, the PIV PUK) is to be typed
    /// on the keypad of `reader` now, no prompt at the keyboard for it; `triesLeft` is `cardTriesUntold` when the
    /// card does not tell them (a PIV PUK outside YubiKey metadata). On the wire a `keypadEntry` with `pin`.
    case keypadCredentialEntry(reader: String, card: String, credential: KeypadCredential, triesLeft: Int)
    /// The reader has a keypad but this card PIN is typed at the keyboard, and why.
    case keypadNotUsed(reader: String, reason: String)

    /// The stable name used in JSON output and logs.
    public var name: String {
        switch self {
        case .created: "created"
        case .verified: "verified"
        case .changed: "changed"
        case .reset: "reset"
        case .wrongPIN: "wrongPIN"
        case .locked: "locked"
        case .delayed: "delayed"
        case .tokenFailed: "tokenFailed"
        case .cancelled: "cancelled"
        case .policyViolation: "policyViolation"
        case .typeChanged: "typeChanged"
        case .unenrolled: "unenrolled"
        case .otherAttempts: "otherAttempts"
        case .keypadEntry, .keypadCredentialEntry: "keypadEntry"
        case .keypadNotUsed: "keypadNotUsed"
        }
    }
}

/// A card credential other than the card PIN that can be typed on a reader's keypad.
public enum KeypadCredential: String, Sendable, Equatable, CaseIterable {
    /// The OpenPGP admin PIN (PW3, `83`).
    case adminPIN = "admin-pin"
    /// The PIV PUK (`81`), which RESET RETRY COUNTER takes with the new PIN.
    case puk

    /// How messages name it: `admin PIN`, `PUK`.
    public var displayName: String {
        switch self {
        case .adminPIN: "admin PIN"
        case .puk: "PUK"
        }
    }
}
