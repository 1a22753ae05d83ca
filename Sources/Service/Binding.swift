import FoundationEssentials
internal import TokenpinAPDU
package import TokenpinCore

// The binder: binding a card to the record (`toggle token on`), sealing and re-sealing its slots under fresh
// challenges, and removing the binding (`toggle token off`).

extension PINService {
    // MARK: Toggle

    /// `toggle token on`: the PIN first (the seeds' rule), then binds the chosen card and proves the binding
    /// once with the card PIN before saving it. Prompts: PIN, admin PIN (only to generate a key), card PIN.
    ///
    /// `mode` `.both` binds in `both` whatever the configuration says (the stricter of the two wins); on a card
    /// already bound in `either` it re-binds it in `both` (see `rebindInBoth`).
    package func enableToken(
        _ interaction: some Interaction, generateKey: Bool = false, assumeYes: Bool = false,
        mode: VerificationMode? = nil, slot: String? = nil
    ) throws(ServiceError) -> VerifyReport {
        try guarded { () throws -> VerifyReport in
            let record = try loadRecord()
            if let binding = record.slot(.token)?.token ?? record.slot(.composite)?.token {
                if mode == .both && record.slot(.composite) == nil { return try rebindInBoth(interaction) }
                throw ServiceError.tokenAlreadyEnabled(serial: cardLabel(serial: binding.serial))
            }
            if let early = earlyOutcome(record) { return VerifyReport(outcome: early, counter: record.counter) }
            if cardScope == .boundCardOnly {
                // Who may bind a card no record binds (`card-bind`), before anything is asked.
                guard let cardAccess else {
                    throw ServiceError.permissionDenied("through tokenpind only root may bind a card here")
                }
                if let refusal = cardAccess.bindRefusal(for: user) { throw ServiceError.permissionDenied(refusal) }
            }
            // Find the card before asking for anything: a missing card costs no PIN try.
            let probe = try chooseCard(interaction)
            if cardScope == .boundCardOnly, let serial = probe.serial, cardAccess?.claim(serial, for: user) != true {
                throw ServiceError.permissionDenied(
                    "another user is binding this card right now; nothing was asked or sent to it")
            }
            if slot == nil && !probe.usable && !generateKey {
                let generation =
                    probe.kind == .piv
                    ? "generates a P-256 key in an empty retired slot of its PIV application"
                    : "creates a cv25519 decryption key on it (replacing the card's decryption key)"
                throw ServiceError.tokenUnavailable(
                    "card \(probe.label) is not usable: \(probe.unusableReason ?? "unknown"); "
                        + "`tokenpin toggle token on --generate-key` \(generation)")
            }
            if let slot, !generateKey { try judgeKey(in: slot, of: probe) }
            let pin = try readAttemptPIN(interaction, .pin, record: record)
            return try countedAttempt(pin: pin) { record, vaultKey in
                try store.save(record)  // the PIN was right: keep the restored counter whatever happens next
                try bind(
                    record: &record, vaultKey: vaultKey, pin: pin, probe: probe, slot: slot,
                    generateKey: generateKey, assumeYes: assumeYes, mode: bindingMode(requested: mode), interaction)
            }
        }
    }

    /// Reads and judges the key in the named `slot` of the card `probe` found, before anything is asked: a key
    /// tokenpin cannot use is refused (exit 6) without a PIN spent.
    func judgeKey(in slot: String, of probe: CardProbe) throws(ServiceError) {
        let card: any TokenApplication
        do throws(TokenFailure) {
            card = try openCard(reader: probe.reader, kind: probe.kind)
        } catch {
            throw error.serviceError
        }
        defer { card.close() }
        do throws(TokenCardError) {
            _ = try card.bindableKey(slot: slot)
        } catch {
            if case .unusable(let why) = error { throw .tokenUnavailable("card \(card.label) is not usable: \(why)") }
            throw failure(error, card: card.label).serviceError
        }
    }

    /// Binds the card `probe` found, which must still be in its reader: the identity is read from the card again
    /// before any PIN is sent to it. Binds to the key already on the card (in `slot` where the application has
    /// slots), or with `generateKey` to a new one.
    func bind(
        record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes, pin: borrowing PIN, probe: CardProbe,
        slot: String?, generateKey: Bool, assumeYes: Bool, mode: VerificationMode? = nil,
        _ interaction: some Interaction
    ) throws {
        let mode = mode ?? configuration.mode
        let reader = probe.reader
        let card = try openCard(reader: reader, kind: probe.kind)
        defer { card.close() }
        guard let serial = probe.serial, card.identity == serial else {
            throw ServiceError.tokenUnavailable(
                "the card in \(reader) changed since it was chosen: it was "
                    + "\(probe.serial.map(cardLabel(serial:)) ?? "unknown"), it is now \(card.label); nothing was sent to it"
            )
        }
        let key: TokenCardKey
        var cardPIN: SecretBytes?
        do {
            if generateKey {
                // Nothing destructive before the card PIN: it is checked first (a wrong one stops here, the card's
                // keys untouched), then the admin PIN or management key, then what the key replaces is shown and
                // confirmed, and only then is the key generated.
                let tries = card.pinTriesLeft
                guard tries > 0 else { throw TokenCardError.blocked }
                let typed = try interaction.readSecret(.cardPIN(card: card.promptName, triesLeft: tries))
                try card.checkPIN(typed)
                cardPIN = consume typed
                // The OpenPGP admin PIN goes in on the keypad where it can (a PIV management key never does).
                let adminKeypad = card.kind == .openpgp ? keypad(for: card, credential: .adminPIN, interaction) : nil
                key = try card.generateKey(slot: slot, assumeYes: assumeYes, adminKeypad: adminKeypad, interaction)
                logger.info(
                    "generated a key for the token",
                    [("card", card.label), ("algorithm", key.algorithm.description), ("slot", key.slot ?? "-")])
            } else {
                // The key already on the card, whatever supported algorithm it uses: nothing on the card changes.
                key = try card.bindableKey(slot: slot)
            }
        } catch TokenCardError.keypadRefused(let refusal) {
            throw Self.keypadError(refusal)
        } catch let error as TokenCardError {
            if case .unusable(let why) = error {
                throw ServiceError.tokenUnavailable("card \(card.label) is not usable: \(why)")
            }
            throw ServiceError.cardRefused(failure(error, card: card.label).reason)
        }
        let binding = newBinding(card, key: key, reader: reader)
        try proveBinding(binding, card: card, reader: reader, pin: cardPIN.take(), interaction)
        try sealTokenSlots(record: &record, vaultKey: vaultKey, pin: pin, binding: binding, mode: mode)
        record.policy = .init(mode: mode, fallback: configuration.fallback)
        record.updated = time.now
        logger.info("token enabled", [("user", user), ("card", card.label), ("mode", mode.rawValue)])
        interaction.report(.typeChanged(type: .token, enabled: true))
    }

    /// The binding of `card` to `key`, before any challenge is made for it (`freshAgreement` makes them).
    func newBinding(_ card: any TokenApplication, key: TokenCardKey, reader: String) -> TokenBinding {
        var binding = TokenBinding(
            serial: card.identity, cardPublicKey: Data(key.publicKey), ephemeralPublicKey: Data(),
            reader: reader, algorithm: key.algorithm.bindingName,
            cardPublicExponent: key.exponent.map { Data($0) })
        binding.setApplication(card.kind, slot: key.slot)
        binding.cardAuthentication = card.cardAuthenticationKey()
        (card as? PKCS11Token)?.describe(&binding)
        return binding
    }

    /// Proves `binding` with one challenge: the card's answer must equal the secret computed here from its public
    /// key. That answer crossed the reader line, so the slots are sealed under a second challenge, which never did
    /// (`sealTokenSlots`). `pin` is the card PIN when it was already asked and checked (`--generate-key`).
    func proveBinding(
        _ binding: TokenBinding, card: any TokenApplication, reader: String, pin: consuming SecretBytes?,
        _ interaction: some Interaction
    ) throws {
        let proof = try freshAgreement(binding, reader: reader)
        let shared = try requireCardSecret(card, binding: proof.binding, interaction, pin: pin)
        guard shared.isEqual(to: proof.secret) else {
            throw ServiceError.cardRefused(
                "card \(card.label) answered \(card.keyOperationName) with a secret that does not match its public key"
            )
        }
    }

    /// Seals the vault key for the card of `binding` under a fresh challenge: a `token` slot (`mode = either`), or
    /// a `composite` slot that replaces the PIN slot (`mode = both`).
    func sealTokenSlots(
        record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes, pin: borrowing PIN,
        binding: TokenBinding, mode: VerificationMode
    ) throws {
        if mode == .both {
            let pinKDF = try chooseKDF()
            let pinKey = try deriveKey(pinKDF, from: pin.secret)
            try sealComposite(
                record: &record, vaultKey: vaultKey, pinKey: pinKey, kdf: pinKDF,
                agreement: freshAgreement(binding, reader: nil))
            record.setSlot(.pin, nil)
            record.setSlot(.token, nil)
        } else {
            try sealToken(record: &record, vaultKey: vaultKey, binding: binding, reader: nil)
        }
    }

    /// Seals the vault key into the `token` slot for the card of `binding`, under a fresh challenge and a fresh
    /// BLAKE2b salt; `reader` (when known) is where the card was just used.
    func sealToken(
        record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes, binding: TokenBinding, reader: String?
    ) throws {
        try sealToken(record: &record, vaultKey: vaultKey, agreement: freshAgreement(binding, reader: reader))
    }

    /// Seals the vault key into the `token` slot under `agreement` (made by `freshAgreement`, here or in advance)
    /// and a fresh BLAKE2b salt.
    func sealToken(
        record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes, agreement: consuming KeyAgreement
    ) throws {
        let kdf = KDFParameters(algorithm: .blake2b)
        let tokenKey = try TokenKeys.tokenKey(
            sharedSecret: agreement.secret, binding: agreement.binding,
            salt: [UInt8](kdf.salt))
        let created = record.slot(.token)?.created ?? time.now
        record.setSlot(
            .token,
            try VaultSlot.seal(
                vaultKey, keyEncryptionKey: tokenKey, kind: .token, kdf: kdf,
                token: agreement.binding, user: user, created: created))
    }

    /// Seals the vault key into the `composite` slot: the PIN's key (derived with `kdf`, whose salt the slot
    /// keeps) mixed with the token key of `agreement`.
    func sealComposite(
        record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes, pinKey: borrowing SecretBytes,
        kdf: KDFParameters, agreement: borrowing KeyAgreement
    ) throws {
        let salt = [UInt8](kdf.salt)
        let binding = agreement.binding
        let tokenKey = try TokenKeys.tokenKey(sharedSecret: agreement.secret, binding: binding, salt: salt)
        let compositeKey = try TokenKeys.compositeKey(tokenKey: tokenKey, pinKey: pinKey, binding: binding, salt: salt)
        let created = record.slot(.composite)?.created ?? time.now
        record.setSlot(
            .composite,
            try VaultSlot.seal(
                vaultKey, keyEncryptionKey: compositeKey, kind: .composite,
                kdf: kdf, token: binding, user: user, created: created))
    }

    /// `toggle token off`: removes the binding after a counted verification, like switching it on.
    ///
    /// `method` nil or `.pin`: one counted PIN attempt (a wrong PIN counts exactly as in `verify`; prompt: PIN).
    /// `.token`: the card PIN and PSO:DECIPHER opening the token slot (prompt: card PIN). The report names the
    /// method used. In `mode = both` the PIN and the card are needed (prompts: PIN, card PIN) and a plain PIN
    /// slot takes the composite slot's place.
    package func disableToken(
        _ interaction: some Interaction,
        method: VerificationMethod? = nil
    ) throws(ServiceError) -> VerifyReport {
        try guarded { () throws -> VerifyReport in
            let record = try loadRecord()
            if record.slot(.composite) != nil {
                if method == .pin {
                    throw ServiceError.tokenUnavailable(
                        "mode = both: the PIN alone cannot switch the token off; the card is needed too")
                }
                return try verifyBoth(interaction, prompt: .pin) { record, vaultKey, pin in
                    let kdf = try chooseKDF()
                    let pinKey = try deriveKey(kdf, from: pin.secret)
                    record.setSlot(
                        .pin,
                        try VaultSlot.seal(
                            vaultKey, keyEncryptionKey: pinKey, kind: .pin, kdf: kdf,
                            user: user, created: time.now))
                    record.setSlot(.composite, nil)
                    record.policy.mode = .either
                    logger.info("token disabled", [("user", user), ("method", "both")])
                    interaction.report(.typeChanged(type: .token, enabled: false))
                }
            }
            guard record.slot(.token) != nil else { throw ServiceError.tokenNotEnabled }
            if modeInForce(record)?.source == .configuration {
                // Else the PIN alone would switch off the card the configuration demands, then verify alone.
                if method == .pin {
                    throw ServiceError.tokenUnavailable(
                        "mode = both (configuration): the PIN alone cannot switch the token off; the card is needed too"
                    )
                }
                return try verifyTokenAndPIN(interaction, then: .removeToken)
            }
            if method == .token { return try disableTokenWithCard(interaction) }
            if let early = earlyOutcome(record) { return VerifyReport(outcome: early, counter: record.counter) }
            let pin = try readAttemptPIN(interaction, .pin, record: record)
            return try countedAttempt(pin: pin) { record, _ in
                record.setSlot(.token, nil)
                logger.info("token disabled", [("user", user), ("method", "pin")])
                interaction.report(.typeChanged(type: .token, enabled: false))
            }
        }
    }

    /// `toggle token off --method token`: under the user's lock, the card opens the token slot, then the slot goes.
    /// A refusal by the card is an outcome (`tokenRejected`); a card that is not there is an error.
    func disableTokenWithCard(_ interaction: some Interaction) throws -> VerifyReport {
        try store.withLock(user: user) { () throws -> VerifyReport in
            guard var record = try store.load(user: user) else {
                throw ServiceError.notEnrolled(user: user, path: recordPath)
            }
            guard let slot = record.slot(.token) else { throw ServiceError.tokenNotEnabled }
            do {
                _ = try openTokenSlot(slot, interaction)
            } catch let failure as TokenFailure {
                interaction.report(
                    .tokenFailed(reason: failure.reason, fallback: false, cardTriesLeft: failure.cardTriesLeft))
                guard failure.kind == .refused else { throw failure.serviceError }
                return VerifyReport(
                    outcome: .tokenRejected(reason: failure.reason), tokenFailure: failure.reason,
                    counter: record.counter)
            }
            record.setSlot(.token, nil)
            record.updated = time.now
            try store.save(record)
            logger.info("token disabled", [("user", user), ("method", "token")])
            interaction.report(.typeChanged(type: .token, enabled: false))
            return VerifyReport(outcome: .verified(method: .token), counter: record.counter)
        }
    }

    /// What a slot is sealed under: a binding with a challenge that never crossed the reader line, and the
    /// secret the card's private key will answer to it, computed here.
    ///
    /// Only `freshAgreement` makes one, so no seal can take a secret a card answered: an answer that crossed the
    /// line (a sniffed USB bus, a hostile reader driver, a fake card replaying it) is only ever checked or used to
    /// open, never sealed under. The next opening sends the challenge to the card, and re-seals under a new one.
    struct KeyAgreement: ~Copyable, Sendable {
        let binding: TokenBinding
        let secret: SecretBytes

        fileprivate init(binding: TokenBinding, secret: consuming SecretBytes) {
            self.binding = binding
            self.secret = secret
        }

        /// The same challenge, its binding naming `reader` (when known) as where the card was just used.
        consuming func found(in reader: String?) -> KeyAgreement {
            var binding = binding
            if let reader { binding.reader = reader }
            return KeyAgreement(binding: binding, secret: secret)
        }
    }

    /// A fresh challenge for the card key in `binding` (an ephemeral pair for ECDH, a random secret encrypted to
    /// an RSA key) and the secret the card would answer to it, computed here from the card's public key. No APDU
    /// is sent; ephemeral private keys are wiped when this returns, and the new challenge replaces the binding's
    /// (TokenKeyAgreement.swift). The same for every application (OpenPGP, PIV, PKCS#11): only the card's public
    /// key and algorithm are used.
    func freshAgreement(_ binding: TokenBinding, reader: String?) throws -> KeyAgreement {
        var binding = binding
        let fresh =
            try PKCS11Token.freshOAEPChallenge(for: binding) ?? bindingAlgorithm(binding).freshChallenge(for: binding)
        binding.ephemeralPublicKey = Data(fresh.challenge)
        if let reader { binding.reader = reader }
        return KeyAgreement(binding: binding, secret: fresh.secret)
    }

    /// The algorithm a stored binding names.
    func bindingAlgorithm(_ binding: TokenBinding) throws(StoreError) -> TokenKeyAlgorithm {
        guard let algorithm = TokenKeyAlgorithm(bindingName: binding.algorithm) else {
            throw StoreError(.corrupt, path: recordPath, "token slot names an unknown algorithm")
        }
        return algorithm
    }

    /// Re-seals the token slot under a fresh challenge when its challenge is still `sent`, one that may have
    /// reached the card in a verification that then failed: whatever answer the card gave opens nothing from now
    /// on. No APDU; run where the vault key is open under the user's lock (the PIN's counted attempt). True when it
    /// re-sealed (the caller saves the record).
    @discardableResult
    func retireTokenChallenge(_ sent: Data?, record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes) throws
        -> Bool
    {
        guard let sent, let binding = record.slot(.token)?.token, binding.ephemeralPublicKey == sent else {
            return false
        }
        try sealToken(record: &record, vaultKey: vaultKey, binding: binding, reader: nil)
        logger.info("token challenge retired", [("user", user)])
        return true
    }

    /// `cardSecret` for binding: a refusal is an error, there is nothing to fall back to.
    func requireCardSecret(
        _ card: any TokenApplication, binding: TokenBinding, _ interaction: some Interaction,
        pin: consuming SecretBytes? = nil
    ) throws -> SecretBytes {
        do {
            return try cardSecret(card, binding: binding, interaction, pin: pin)
        } catch let failure as TokenFailure {
            throw ServiceError.cardRefused(failure.reason)
        }
    }

}
