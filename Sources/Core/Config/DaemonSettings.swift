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
