import TokenpinCore
import TokenpinProtocol
import TokenpinService

// The login keyring in tokenpind (`login-keyring = on`, docs/security.md): the password stack seals the login
// password, and a PAM verification by the user at this machine gets it back for `pam_gnome_keyring` or
// `pam_kwallet5`. Who gets it is decided here, from the class of the attempt; every refusal says why in the
// journal, never with the password.
extension Daemon {
    /// Why the login password is not handed to this verification, or nil when it may be: only a PAM stack (a root
    /// peer with invoker fields) at the seat, the user's own (`sudo`, a locker run as root) or a local login (login,
    /// a greeter); never a remote login or another user's `su`, and nothing with `login-keyring = off`.
    static func loginKeyringRefusal(
        peer: Peer, invoker: Invoker?, context: AttemptContext, configuration: Configuration
    ) -> String? {
        guard configuration.loginKeyring else { return "login-keyring = off" }
        guard peer.isRoot, invoker != nil else { return "not a PAM stack (only pam_tokenpin gets it)" }
        switch context.class {
        case .own, .local: return nil
        case .remote: return "a remote login (\(context.rhost ?? "PAM_RHOST set"))"
        case .other:
            return "another user's \(context.service ?? "su") (uid \(context.invokerUID.map(String.init) ?? "?"))"
        }
    }

    /// A `verify` that asks for the login password, or any `verify` with `login-keyring = on`: the verification
    /// `verify` runs, which with the setting on also gives a record made before it its public key; then the
    /// password, when this attempt asked for it, may have it, and one is sealed.
    func verifyForLoginKeyring(
        _ verify: Operation.Verify, invoker: Invoker?, service: PINService, user: String, relay: RelayInteraction,
        configuration: Configuration, peer: Peer
    ) throws(ServiceError) -> Reply {
        let context = service.attempt
        let asked = verify.loginKeyring
        let refusal = Self.loginKeyringRefusal(
            peer: peer, invoker: invoker, context: context, configuration: configuration)
        var result: LoginKeyringVerification
        if configuration.loginKeyring {
            result = try service.verifyOpeningLoginKeyring(
                relay, method: verify.method, release: asked && refusal == nil)
        } else {
            result = LoginKeyringVerification(
                report: try service.verify(relay, method: verify.method), password: nil, withheld: nil)
        }
        let report = result.report
        publishOutcome(report, user: user, success: nil)
        auditOutcome(report, user: user, context: context)
        let exitCode = Int(report.exitCode.rawValue)
        guard case .verified = report.outcome else {
            return Reply(.result(exitCode: exitCode, fields: report.protocolFields))
        }
        guard let password = result.password.take() else {
            guard asked else { return Reply(.result(exitCode: exitCode, fields: report.protocolFields)) }
            logger.info(
                "login password not released",
                [
                    ("user", user), ("class", context.class.rawValue), ("service", context.service ?? ""),
                    ("reason", refusal ?? result.withheld ?? "none"),
                ])
            return Reply(.result(exitCode: exitCode, fields: report.protocolFields))
        }
        logger.info(
            "login password released to PAM",
            [("user", user), ("class", context.class.rawValue), ("service", context.service ?? "")])
        return Reply(
            bytes: LoginKeyringWire.resultLine(exitCode: exitCode, fields: report.protocolFields, password: password))
    }

    /// `seal-login-password`: asks for the password (the `password` prompt) and seals it to the user's record. Only
    /// the user for their own record (the daemon's peer check) or root may send it, and of root's PAM stacks not a
    /// remote one or another user's (`admit`); refused before the prompt with `login-keyring = off`.
    func sealLoginPassword(
        service: PINService, user: String, relay: RelayInteraction, configuration: Configuration
    ) throws(ServiceError) -> Reply {
        let context = service.attempt
        guard configuration.loginKeyring else {
            logger.info("login password not sealed", [("user", user), ("reason", "login-keyring = off")])
            throw .permissionDenied(
                "login-keyring = off in tokenpin.conf: no login password is kept; nothing was asked")
        }
        let password = try relay.readSecret(.loginPassword)
        do {
            try service.sealLoginPassword(password)
        } catch {
            logger.warning("login password not sealed", [("user", user), ("reason", error.message)])
            throw error
        }
        logger.info(
            "login password sealed",
            [("user", user), ("class", context.class.rawValue), ("service", context.service ?? "")])
        hub.publish(user: user, name: "loginPasswordSealed", fields: [])
        return Reply(.result(exitCode: 0, fields: []))
    }

    /// After an enrolment whose login password tokenpind checked: that password, sealed to the new record. A
    /// failure is said in the journal and fails nothing (the password stack seals the next one).
    func sealAfterEnrolment(_ password: consuming SecretBytes, service: PINService, user: String) {
        do {
            try service.sealLoginPassword(password)
            logger.info("login password sealed at enrolment", [("user", user)])
        } catch {
            logger.warning("login password not sealed at enrolment", [("user", user), ("reason", error.message)])
        }
    }
}
