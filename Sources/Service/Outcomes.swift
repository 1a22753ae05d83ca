import FoundationEssentials
package import TokenpinCore

/// The result of a verification: expected outcomes are values.
package enum VerifyOutcome: Sendable, Equatable {
    /// Verified.
    case verified(method: VerificationMethod)
    /// Wrong PIN; `remaining` tries left, `lastTry` when only one is left.
    case rejected(remaining: Int, lastTry: Bool)
    /// No tries left: the PIN is locked until `reset`.
    case locked
    /// A failure delay is running; try again in `seconds`.
    case delayed(seconds: Int)
    /// The token was asked for and failed (wrong card PIN, card blocked) and no fallback applied.
    case tokenRejected(reason: String)

    /// The event this outcome reports.
    package var event: Event {
        switch self {
        case .verified(let method): .verified(method: method)
        case .rejected(let remaining, let lastTry): .wrongPIN(remaining: remaining, lastTry: lastTry)
        case .locked: .locked
        case .delayed(let seconds): .delayed(seconds: seconds)
        case .tokenRejected(let reason): .tokenFailed(reason: reason, fallback: false)
        }
    }
}

/// A verification's outcome with what happened on the way (a token failure before the PIN) and its cost.
package struct VerifyReport: Sendable, Equatable {
    /// The outcome.
    package var outcome: VerifyOutcome
    /// The token failure that led to the PIN, if any.
    package var tokenFailure: String?
    /// Time spent in the key derivation, in nanoseconds.
    package var kdfNanoseconds: UInt64
    /// The counter after the attempt.
    package var counter: RetryCounter?
    /// The card that verified (`method` token or both), for the card-removal lock.
    package var card: VerifiedCard?
    /// Whether `counter` is the remote/other counter (a remote or other attempt), not the PIN's own.
    package var countedApart = false
    /// What remote and other attempts did since the user's last own or local success, cleared by this one.
    package var otherAttempts: OtherAttemptsNotice?

    /// Creates a report.
    package init(
        outcome: VerifyOutcome, tokenFailure: String? = nil, kdfNanoseconds: UInt64 = 0, counter: RetryCounter? = nil,
        card: VerifiedCard? = nil
    ) {
        self.outcome = outcome
        self.tokenFailure = tokenFailure
        self.kdfNanoseconds = kdfNanoseconds
        self.counter = counter
        self.card = card
    }
}

/// The card a token verification used: its serial as read from the card, and the reader it was in.
package struct VerifiedCard: Sendable, Equatable {
    /// Manufacturer and serial number, 12 hex digits.
    package var serial: String
    /// The reader.
    package var reader: String
    /// How its removal is noticed, as its token application declares.
    package var removalWatch: TokenRemovalWatch

    /// Creates the description.
    package init(serial: String, reader: String, removalWatch: TokenRemovalWatch = .readerEvents) {
        self.serial = serial
        self.reader = reader
        self.removalWatch = removalWatch
    }
}

/// The status of one authentication type.
package struct TypeStatus: Sendable, Equatable, Codable {
    /// The type.
    package var type: AuthenticationType
    /// Whether it is on.
    package var enabled: Bool
    /// Whether it can be switched off.
    package var canDisable: Bool
    /// The bound card's serial, for the token.
    package var serial: String?

    /// Creates a status.
    package init(type: AuthenticationType, enabled: Bool, canDisable: Bool, serial: String? = nil) {
        self.type = type
        self.enabled = enabled
        self.canDisable = canDisable
        self.serial = serial
    }
}

/// What `status` reports.
package struct StatusReport: Sendable, Equatable {
    /// The user.
    package var user: String
    /// The record's path.
    package var recordPath: String
    /// Whether a PIN is enrolled.
    package var enrolled: Bool
    /// Tries left.
    package var remaining: Int?
    /// Tries after a success.
    package var maximum: Int?
    /// Whether the PIN is locked.
    package var locked: Bool
    /// When it locked.
    package var lockedAt: Date?
    /// Seconds of failure delay still to run.
    package var delaySeconds: Int
    /// Failures since the last success.
    package var failures: Int
    /// The PIN slot's key derivation.
    package var kdf: KDFParameters?
    /// The authentication types.
    package var types: [TypeStatus]
    /// The verification mode in force (the stricter of the record's and the configuration's).
    package var mode: VerificationMode?
    /// The fallback policy in force (`deny` in the record or the configuration wins).
    package var fallback: FallbackPolicy?
    /// The token's state, when the token type is supported by this build.
    package var token: TokenStatus?
    /// Where `mode` comes from: the record, or the configuration when it is stricter than the binding.
    package var modeSource: ModeInForce.Source?
    /// Failed remote and other attempts since the user's last own or local success (`otherFailures`).
    package var otherFailures = 0
    /// Whether remote and other attempts are locked out (`otherLocked`).
    package var otherLocked = false
    /// The last remote or other attempt (`otherLast`), and its invoker's name when known.
    package var otherLast: OtherAttempts.Attempt?
    /// The login name of `otherLast`'s invoker.
    package var otherLastInvoker: String?

    /// The record was bound in `either` under `mode = both`: re-binding in `both` adds the composite slot's
    /// offline protection.
    package var rebindAdvised: Bool { modeSource == .configuration && mode == .both }

    /// Creates a report.
    package init(
        user: String, recordPath: String, enrolled: Bool, remaining: Int?, maximum: Int?, locked: Bool,
        lockedAt: Date?, delaySeconds: Int, failures: Int, kdf: KDFParameters?, types: [TypeStatus],
        mode: VerificationMode?, fallback: FallbackPolicy?, token: TokenStatus?,
        modeSource: ModeInForce.Source? = nil
    ) {
        self.modeSource = modeSource
        self.user = user
        self.recordPath = recordPath
        self.enrolled = enrolled
        self.remaining = remaining
        self.maximum = maximum
        self.locked = locked
        self.lockedAt = lockedAt
        self.delaySeconds = delaySeconds
        self.failures = failures
        self.kdf = kdf
        self.types = types
        self.mode = mode
        self.fallback = fallback
        self.token = token
    }
}

/// What the token side reports for `status` and `types`.
package struct TokenStatus: Sendable, Equatable {
    /// Every reader and the card in it.
    package var readers: [ReaderInfo]
    /// The error that kept tokenpin from listing readers (pcscd down), if any.
    package var problem: String?
    /// The reader holding the enrolled card, if present.
    package var matchingReader: String?
    /// The enrolled card's PIN tries left, when the card is present.
    package var cardPINTriesLeft: Int?
    /// The application the card is bound through (`openpgp`, `piv`), from the record.
    package var application: String?
    /// The PIV slot of the bound key, from the record.
    package var slot: String?
    /// The bound key's algorithm (`cv25519`, `rsa2048`, `nistp256`...), from the record.
    package var algorithm: String?
    /// Where the site revoked the bound card (`FILE:LINE` of `/etc/tokenpin/revoked.d`), or nil.
    package var revoked: String?

    /// Creates a status.
    package init(
        readers: [ReaderInfo], problem: String? = nil, matchingReader: String? = nil, cardPINTriesLeft: Int? = nil,
        application: String? = nil, slot: String? = nil, algorithm: String? = nil
    ) {
        self.readers = readers
        self.problem = problem
        self.matchingReader = matchingReader
        self.cardPINTriesLeft = cardPINTriesLeft
        self.application = application
        self.slot = slot
        self.algorithm = algorithm
    }
}

/// One reader and what is in it.
package struct ReaderInfo: Sendable, Equatable {
    /// The reader's name.
    package var name: String
    /// Whether a card is present.
    package var cardPresent: Bool
    /// The card's serial (manufacturer and serial as gpg prints them), when it is an OpenPGP card.
    package var serial: String?
    /// Whether the card is an OpenPGP card.
    package var isOpenPGP: Bool
    /// The token application tokenpin found on the card (`openpgp`, `piv`), nil when none.
    package var application: String?
    /// Whether the card has a decryption key of an algorithm tokenpin binds to (usable as it is).
    package var usable: Bool
    /// Why it is not usable.
    package var unusableReason: String?
    /// The card PIN's tries left.
    package var cardPINTriesLeft: Int?
    /// The key a binding would use as the card is: `rsa2048`, `nistp256 in 9d`.
    package var key: String?
    /// The reader's keypad for card PINs (PC/SC part 10 secure PIN entry), nil when it has none.
    package var pinpad: ReaderPinpad?

    /// Creates a reader description.
    package init(
        name: String, cardPresent: Bool, serial: String? = nil, isOpenPGP: Bool = false, application: String? = nil,
        usable: Bool = false, unusableReason: String? = nil, cardPINTriesLeft: Int? = nil, key: String? = nil
    ) {
        self.key = key
        self.name = name
        self.cardPresent = cardPresent
        self.serial = serial
        self.isOpenPGP = isOpenPGP
        self.application = application ?? (isOpenPGP ? TokenApplicationKind.openpgp.rawValue : nil)
        self.usable = usable
        self.unusableReason = unusableReason
        self.cardPINTriesLeft = cardPINTriesLeft
    }
}

/// What `enrol` hands back: the recovery key, to show once, and the chosen KDF.
package struct EnrolmentResult: ~Copyable {
    /// The recovery key's written form (ASCII, guarded memory).
    package let recoveryKeyText: SecretBytes
    /// The PIN slot's key derivation.
    package let kdf: KDFParameters
    /// The record's path.
    package let recordPath: String

    /// Creates a result.
    package init(recoveryKeyText: consuming SecretBytes, kdf: KDFParameters, recordPath: String) {
        self.recoveryKeyText = recoveryKeyText
        self.kdf = kdf
        self.recordPath = recordPath
    }
}
