package import TokenpinCore

/// What a verification gave the login keyring: the report, and the login password when it was released.
package struct LoginKeyringVerification: ~Copyable {
    /// The verification, as `verify` reports it.
    package var report: VerifyReport
    /// The login password (guarded memory); nil unless the verification succeeded, the release was allowed and a
    /// sealed password opened.
    package var password: SecretBytes?
    /// Why nothing was released after a success, for the journal (never the password); nil when it was released or
    /// the verification failed.
    package var withheld: String?

    /// Creates a result.
    package init(report: VerifyReport, password: consuming SecretBytes?, withheld: String?) {
        self.report = report
        self.password = password
        self.withheld = withheld
    }
}

extension PINService {
    /// Verifies exactly as `verify` does and, when it succeeds, keeps the login keyring's public key current and,
    /// when `release` is true, opens the sealed login password (`login-keyring = on`, docs/security.md).
    ///
    /// The key pair comes from the vault key the verification opened (`LoginKeyring`); the record's public key file
    /// is written when it is missing (a record made before the setting), damaged, or of an earlier record (its
    /// sealed password could never open again). A failed verification releases and writes nothing.
    package func verifyOpeningLoginKeyring(
        _ interaction: some Interaction, method: VerificationMethod?, release: Bool
    ) throws(ServiceError) -> LoginKeyringVerification {
        var service = self
        let keyRelease = ApplicationKeyRelease(user: user, application: LoginKeyring.application)
        service.keyRelease = keyRelease
        let report = try service.verify(interaction, method: method)
        guard case .verified = report.outcome, let secret = keyRelease.take() else {
            return LoginKeyringVerification(report: report, password: nil, withheld: nil)
        }
        let publicKey: [UInt8]
        do {
            publicKey = try X25519.publicKey(for: secret)
        } catch {
            return LoginKeyringVerification(report: report, password: nil, withheld: "the key pair failed: \(error)")
        }
        guard let file = currentLoginKeyring(publicKey: publicKey) else {
            return LoginKeyringVerification(
                report: report, password: nil, withheld: "the login-keyring file is unusable")
        }
        guard release else { return LoginKeyringVerification(report: report, password: nil, withheld: nil) }
        guard let sealed = file.sealedPassword else {
            return LoginKeyringVerification(report: report, password: nil, withheld: "no login password is sealed")
        }
        do {
            let password = try SealedBox.open(sealed, publicKey: publicKey, secretKey: secret)
            return LoginKeyringVerification(report: report, password: password, withheld: nil)
        } catch {
            logger.warning(
                "the sealed login password does not open; it is kept for the admin to look at",
                [("user", user), ("path", store.loginKeyringPath(for: user)), ("reason", error.detail)])
            return LoginKeyringVerification(
                report: report, password: nil, withheld: "the sealed login password does not open (damaged)")
        }
    }

    /// The login-keyring file with `publicKey`, written when it is missing, damaged or of another record; nil when
    /// it cannot be read or written (said in the log, never fatal to the verification that just succeeded).
    func currentLoginKeyring(publicKey: [UInt8]) -> LoginKeyringFile? {
        let path = store.loginKeyringPath(for: user)
        let existing: LoginKeyringFile?
        do {
            existing = try store.loadLoginKeyring(user: user)
        } catch {
            guard error.code == .corrupt else {
                logger.warning("the login-keyring file cannot be read", [("user", user), ("reason", error.detail)])
                return nil
            }
            logger.warning(
                "the login-keyring file is damaged; replaced by the public key alone",
                [
                    ("user", user), ("reason", error.detail),
                ])
            existing = nil
        }
        if let existing, existing.publicKey == publicKey { return existing }
        if existing != nil {
            logger.warning(
                "the sealed login password was for an earlier record; dropped", [("user", user), ("path", path)])
        }
        let fresh = LoginKeyringFile(publicKey: publicKey)
        do {
            try store.saveLoginKeyring(fresh, user: user)
        } catch {
            logger.warning("the login-keyring file cannot be written", [("user", user), ("reason", error.detail)])
            return nil
        }
        logger.info("login-keyring public key stored", [("user", user), ("path", path)])
        return fresh
    }

    /// After a new record (enrol, root's reset): the old login-keyring file opens with nothing now, so it goes;
    /// with `login-keyring = on`, the new record's public key takes its place. Call under the user's lock.
    func replaceLoginKeyring(vaultKey: borrowing SecretBytes) throws {
        try store.removeLoginKeyring(user: user)
        guard configuration.loginKeyring else { return }
        let pair = try LoginKeyring.keyPair(vaultKey: vaultKey, user: user)
        try store.saveLoginKeyring(LoginKeyringFile(publicKey: pair.publicKey), user: user)
    }

    /// Seals `password` to the record's login-keyring public key: no verification, the public key is enough (the
    /// password stack, after pam_unix set a new password; the daemon, after the login password it checked for a
    /// first enrolment). The password is wiped before this returns.
    ///
    /// Refused with `login-keyring = off`, without a record, before the record has a public key (made before the
    /// setting and not verified since), and for a password that is empty, longer than 1024 bytes or holds a NUL.
    package func sealLoginPassword(_ password: consuming SecretBytes) throws(ServiceError) {
        guard configuration.loginKeyring else {
            throw .permissionDenied("login-keyring = off in tokenpin.conf: no login password is kept")
        }
        guard LoginKeyring.isKeepable(password) else {
            throw .input("a login password to keep is 1 to \(LoginKeyring.maximumPasswordLength) bytes without NUL")
        }
        let path = store.loginKeyringPath(for: user)
        try guarded { () throws in
            try store.withLock(user: user) { () throws in
                guard try store.load(user: user) != nil else {
                    throw ServiceError.notEnrolled(user: user, path: recordPath)
                }
                guard var file = try store.loadLoginKeyring(user: user) else {
                    throw ServiceError.configuration(
                        "\(user)'s record has no login-keyring key yet (\(path)): it is made at a verification with "
                            + "login-keyring = on; verify once, then change the password again")
                }
                file.sealedPassword = try SealedBox.seal(password, to: file.publicKey)
                try store.saveLoginKeyring(file, user: user)
            }
        }
        logger.info("login password sealed", [("user", user), ("path", path)])
    }
}
