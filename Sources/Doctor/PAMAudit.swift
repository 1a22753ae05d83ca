/// How a PAM stack that loads pam_tokenpin treats the people it must serve, and someone with neither secret:
/// the stack is run (`PAMStack.run`) against what each module would answer in each case.
package struct PAMAudit: Sendable, Equatable {
    /// The service (its file in `/etc/pam.d`).
    package var service: String
    /// What would go wrong, one sentence each: failing open, locking out, refusing the right PIN, a line libpam
    /// cannot read. Empty when the stack is sound.
    package var failures: [String]
    /// Whether a right PIN alone logs in (else the password is needed too).
    package var pinAloneLogsIn: Bool
    /// Whether Enter at the PIN prompt goes on to the password (else the PIN is required of those who have one).
    package var enterGoesToPassword: Bool

    /// What a module is, for what it answers in each case.
    enum Role {
        case tokenpin, password, deny, permit, faillockFail, other
    }

    /// Modules that check the account's own password (or its directory's).
    static let passwordModules: Set<String> = [
        "pam_unix.so", "pam_unix2.so", "pam_sss.so", "pam_ldap.so", "pam_krb5.so", "pam_winbind.so",
        "pam_systemd_home.so", "pam_pwdb.so",
    ]
    /// Modules that check nothing a person types and let the stack go on (environment, delays, limits, checks).
    static let passiveModules: Set<String> = [
        "pam_env.so", "pam_faildelay.so", "pam_cap.so", "pam_group.so", "pam_nologin.so", "pam_securetty.so",
        "pam_succeed_if.so", "pam_shells.so", "pam_listfile.so", "pam_access.so", "pam_time.so", "pam_limits.so",
        "pam_keyinit.so", "pam_loginuid.so", "pam_motd.so", "pam_mail.so", "pam_lastlog.so", "pam_umask.so",
        "pam_gnome_keyring.so", "pam_kwallet5.so", "pam_kwallet.so", "pam_mkhomedir.so", "pam_selinux.so",
        "pam_warn.so", "pam_echo.so", "pam_exec.so",
    ]

    static func role(of line: PAMStack.Line) -> Role {
        switch line.module {
        case "pam_tokenpin.so": return .tokenpin
        case "pam_deny.so": return .deny
        case "pam_permit.so": return .permit
        case "pam_faillock.so": return line.arguments.contains("authfail") ? .faillockFail : .permit
        default:
            if passwordModules.contains(line.module) { return .password }
            if passiveModules.contains(line.module) { return .permit }
            return .other
        }
    }

    /// The stack's answer when pam_tokenpin answers `tokenpin` and the password modules `password`. Modules of
    /// other kinds (a fingerprint, a second factor the person does not use) answer `ignore`.
    static func outcome(_ stack: PAMStack, tokenpin: PAMResult, password: PAMResult) -> PAMResult {
        stack.run { line in
            switch role(of: line) {
            case .tokenpin:
                return tokenpin == .authinfoUnavail && line.arguments.contains("ignore_unavailable")
                    ? .ignore : tokenpin
            case .password: return password
            case .deny, .faillockFail: return .authErr
            case .permit: return .success
            case .other: return .ignore
            }
        }
    }

    /// Audits `stack`, the auth stack of `service`.
    package static func audit(service: String, stack: PAMStack) -> PAMAudit {
        var failures: [String] = stack.problems.map { "\($0.source): \($0.problem ?? "")" }
        func logsIn(_ tokenpin: PAMResult, _ password: PAMResult) -> Bool {
            outcome(stack, tokenpin: tokenpin, password: password) == .success
        }
        if !logsIn(.success, .success) {
            failures.append("refuses the right PIN even with the right password (does a jump land on pam_deny?)")
        }
        if !logsIn(.authinfoUnavail, .success) {
            failures.append(
                "locks out root and every user without a tokenpin record (and everyone while tokenpind is down): "
                    + "the password does not log in when pam_tokenpin answers \"unavailable\"")
        }
        if logsIn(.authErr, .authErr) {
            failures.append("fails open: a wrong PIN and a wrong password log in")
        }
        if logsIn(.authinfoUnavail, .authErr) {
            failures.append("fails open: a user without a record logs in with a wrong password")
        }
        return PAMAudit(
            service: service, failures: failures, pinAloneLogsIn: logsIn(.success, .authErr),
            enterGoesToPassword: logsIn(.authErr, .success))
    }
}
