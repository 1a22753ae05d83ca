import Synchronization
package import TokenpinCore
internal import TokenpinSystem

/// Takes the vault key at the moment a verification opened it and keeps only the application key derived from it.
///
/// A `derive` runs the very verification `verify` runs, with one of these set on the service (`keyRelease`): the
/// two places a verification succeeds (a counted PIN attempt, a token attempt) hand it the vault key under the
/// user's lock, before the record is saved, and it derives the key at once. The vault key never leaves the
/// service; the application key stays in guarded memory until `take()` moves it out.
package final class ApplicationKeyRelease: Sendable {
    /// Whose key and for which application.
    package let user: String
    /// The application.
    package let application: ApplicationName
    private let released = Mutex<SecretBytes?>(nil)

    /// A release of `application`'s key for `user`.
    package init(user: String, application: ApplicationName) {
        self.user = user
        self.application = application
    }

    /// Derives the application key from the vault key a verification just opened.
    func opened(_ vaultKey: borrowing SecretBytes) throws {
        try released.withLock { (slot: inout sending SecretBytes?) throws(CryptoError) in
            slot = try ApplicationKeys.key(vaultKey: vaultKey, user: user, application: application)
        }
    }

    /// The key, once: nil when no verification succeeded.
    func take() -> SecretBytes? {
        released.withLock { slot in slot.take() }
    }
}

/// What `derive` gives: the verification's report, and the key when it succeeded.
package struct DerivedKey: ~Copyable {
    /// The verification, as `verify` reports it.
    package var report: VerifyReport
    /// The application key (32 bytes, guarded memory); nil unless `report` is a success.
    package var key: SecretBytes?

    /// Creates a result.
    package init(report: VerifyReport, key: consuming SecretBytes?) {
        self.report = report
        self.key = key
    }
}

extension PINService {
    /// Verifies the user exactly as `verify` does (token first with fallback, prompts, counter, events) and, on
    /// success, releases the key of `application`; a failed verification releases nothing.
    ///
    /// The site's rules for the application (`ApplicationPolicy`) come first, before anything is asked: `derive`
    /// switched off, callers restricted to root, a verification that must use the card (`method = token`) or the
    /// PIN and the card (`method = both`, which makes the verification that of `mode = both`).
    package func derive(_ interaction: some Interaction, application: ApplicationName, method: VerificationMethod?)
        throws(ServiceError) -> DerivedKey
    {
        let (enabled, policy) = configuration.derivePolicy(for: application)
        guard enabled else {
            throw .permissionDenied("derive is switched off for \(application) (tokenpin.conf); nothing was asked")
        }
        if policy.callers == .root, !(callerIsRoot ?? (CurrentProcess.effectiveUserID == 0)) {
            throw .permissionDenied(
                "only root may ask for the key of \(application) (callers = root); nothing was asked")
        }
        var service = self
        var method = method
        if policy.method != .any {
            if method == .pin {
                throw .permissionDenied(
                    "the key of \(application) needs the card (method = \(policy.method.rawValue)); not --method pin")
            }
            let record = try guarded { () throws -> EnrolmentRecord in try loadRecord() }
            guard record.slot(.token) != nil || record.slot(.composite) != nil else {
                throw .tokenUnavailable(
                    "the key of \(application) needs the card (method = \(policy.method.rawValue)) and no token is bound"
                )
            }
            if policy.method == .both {
                // Stricter wins: the verification of `mode = both`, the PIN and the card, one counted attempt.
                service.configuration.mode = .both
                method = nil
            } else if record.slot(.composite) == nil {
                method = .token
            }
        }
        let release = ApplicationKeyRelease(user: user, application: application)
        service.keyRelease = release
        let report = try service.verify(interaction, method: method)
        let key = release.take()
        guard case .verified(let used) = report.outcome, let key else {
            return DerivedKey(report: report, key: nil)
        }
        switch (policy.method, used) {
        case (.any, _), (.token, .token), (.token, .both), (.both, .both): break
        default:
            // The rules above make this unreachable; should a path ever verify otherwise, nothing is released.
            throw .permissionDenied("\(application) needs method = \(policy.method.rawValue); verified with \(used)")
        }
        logger.info("key released", [("user", user), ("app", application.rawValue), ("method", used.rawValue)])
        return DerivedKey(report: report, key: key)
    }

    /// Hands the vault key a verification opened to the release of a `derive`; nothing outside a `derive`.
    func releaseKey(_ vaultKey: borrowing SecretBytes) throws {
        try keyRelease?.opened(vaultKey)
    }
}
