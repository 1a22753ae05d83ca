/// tokenpind's own settings: its limits, its timeouts and its rules for who may do what (the keys whose audience is
/// `.daemon`), read from the system files only. No client and no local command reads them. `login-keyring` is a
/// daemon key too but stays `Configuration.loginKeyring`: the service reads it when it replaces a record.
public struct DaemonSettings: Sendable, Equatable {
    /// The memory all Argon2id work may use at once, in MiB (`daemon-kdf-memory`, default 1 GiB).
    public var kdfMemoryMiB: Int = 1024
    /// Seconds a connection may stay silent between requests (`daemon-idle-timeout`).
    public var idleTimeoutSeconds: Int = 30
    /// Seconds a client may take to answer a prompt (`daemon-prompt-timeout`).
    public var promptTimeoutSeconds: Int = 120
    /// Seconds a PAM conversation may take to answer a prompt (`daemon-pam-prompt-timeout`).
    public var pamPromptTimeoutSeconds: Int = 30
    /// Requests one connection may make per minute (`daemon-rate-limit`).
    public var requestsPerMinute: Int = 60
    /// The longest an operation waits for the user's lock or for key-derivation memory before it answers `busy`
    /// (`daemon-wait-timeout`).
    public var waitTimeoutSeconds: Int = 30
    /// What to do when the card a user verified with leaves its reader (`on-card-removal`).
    public var onCardRemoval: CardRemovalAction = .none
    /// Seconds to wait for the card to come back before acting on its removal (`lock-grace`).
    public var lockGraceSeconds: Int = 0
    /// What a user proves before a first way in through the daemon, `enrol` or `import` (`enrol-auth`).
    public var enrolAuth: Configuration.EnrolAuthentication = .password
    /// The PAM service that checks the login password for `enrol-auth = password` (`enrol-pam-service`).
    public var enrolPAMService: String = "tokenpin-enrol"
    /// What a remote login through PAM gets (`pam-remote`).
    public var pamRemote: RemotePolicy = .ignore
    /// What another user's PAM attempt (`su`) gets (`pam-other-user`).
    public var pamOtherUser: OtherUserPolicy = .pin
    /// Who may bind a card no record binds (`card-bind`).
    public var cardBind: CardBindPolicy = .activeSession

    /// The defaults.
    public init() {}
}

extension Configuration {
    /// What a user proves to tokenpind before it creates a first way in for them (`enrol-auth`).
    public enum EnrolAuthentication: String, Sendable, CaseIterable {
        /// The login password, checked through the PAM service `enrol-pam-service`.
        case password
        /// Nothing: any process running as the user may enrol a PIN (a single-user machine's choice).
        case none
    }
}

/// What tokenpind does when the card a user verified with is removed (`on-card-removal`).
public enum CardRemovalAction: String, Sendable, CaseIterable {
    /// Nothing.
    case none
    /// Lock that user's sessions through logind (`loginctl lock-session`).
    case lock
}

/// What tokenpind does with a PAM attempt from a remote login (`pam-remote`).
public enum RemotePolicy: String, Sendable, CaseIterable {
    /// The PIN only, counted on the remote/other counter; the card is never offered.
    case pin
    /// Nothing is asked: the module steps aside (unavailable) and the stack goes on, as pam_fprintd does.
    case ignore
}

/// What tokenpind does with a PAM attempt made by another user (`su victim`, `pam-other-user`).
public enum OtherUserPolicy: String, Sendable, CaseIterable {
    /// The PIN only, counted on the remote/other counter; the card is never offered.
    case pin
    /// Refused before anything is asked (`PAM_PERM_DENIED`).
    case deny
}

/// Who may bind, through tokenpind, a card no record binds (`card-bind`).
public enum CardBindPolicy: String, Sendable, CaseIterable {
    /// The user who owns the active local logind session (the person at the seat); without logind, no user.
    case activeSession = "active-session"
    /// Any user.
    case anyUser = "any-user"
    /// Root only.
    case root
}
