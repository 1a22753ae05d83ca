package import TokenpinCore

/// The verification mode in force for a record with the token bound, and where it comes from.
///
/// Stricter settings win: a record bound in `either` under a configuration that says `mode = both` verifies
/// only when both its token slot and its PIN slot open. That enforces the mode online; the offline protection
/// of `both` (one composite slot that no copy of the record opens without the card) comes only with a binding
/// made in `both`, so `rebindAdvised` says a re-binding would add it.
package struct ModeInForce: Sendable, Equatable {
    /// Where a mode comes from.
    package enum Source: String, Sendable, Equatable {
        /// The record: the mode the token was bound in.
        case record
        /// The configuration (`mode`), stricter than the record.
        case configuration
    }

    /// The mode verification follows.
    package var mode: VerificationMode
    /// Where it comes from.
    package var source: Source
    /// The record was bound in `either` and the configuration says `both`: `toggle token on --mode both` would
    /// replace the two slots with the composite slot.
    package var rebindAdvised: Bool { source == .configuration && mode == .both }

    /// Creates a description.
    package init(mode: VerificationMode, source: Source) {
        self.mode = mode
        self.source = source
    }
}

extension PINService {
    /// The mode a new binding is made in: `both` when asked for or when the configuration says so.
    func bindingMode(requested: VerificationMode?) -> VerificationMode {
        requested == .both || configuration.mode == .both ? .both : .either
    }

    /// `toggle token on --mode both` on a card bound in `either`: the card and the PIN (one counted attempt),
    /// then one composite slot replaces the token and PIN slots. Prompts: PIN, card PIN.
    func rebindInBoth(_ interaction: some Interaction) throws -> VerifyReport {
        try verifyTokenAndPIN(interaction, then: .rebind)
    }

    /// What a verification with both slots does once both opened.
    enum StepAfterBoth {
        /// Re-seal the token slot under a fresh ephemeral key (`verify`).
        case reseal
        /// Replace both slots with a composite slot (`toggle token on --mode both`).
        case rebind
        /// Remove the token slot (`toggle token off`).
        case removeToken
    }

    /// The mode in force for `record`: `both` for a composite slot; `both` from the configuration for a record
    /// bound in `either` when `mode = both` is set; else the record's. Nil when no token is bound.
    package func modeInForce(_ record: EnrolmentRecord) -> ModeInForce? {
        if record.slot(.composite) != nil { return ModeInForce(mode: .both, source: .record) }
        guard record.slot(.token) != nil else { return nil }
        if configuration.mode == .both { return ModeInForce(mode: .both, source: .configuration) }
        return ModeInForce(mode: record.policy.mode, source: .record)
    }

    /// `mode = both` from the configuration on a record bound in `either`: the card opens the token slot, then
    /// one counted PIN attempt opens the PIN slot; both must succeed.
    ///
    /// Prompts: PIN, then card PIN (as for a composite slot). The card is found before anything is asked and
    /// its refusal counts no PIN try; a token that is absent or fails never falls back to the PIN alone. On
    /// success the token slot is re-sealed under a fresh ephemeral key, as after a token verification.
    ///
    /// `then` says what the success does instead of the re-seal: `.rebind` replaces the token and PIN slots with
    /// one composite slot (a binding in `both`); `.removeToken` removes the token slot (`toggle token off`).
    func verifyTokenAndPIN(_ interaction: some Interaction, then step: StepAfterBoth = .reseal) throws -> VerifyReport {
        let record = try loadRecord()
        if let early = earlyOutcome(record) { return VerifyReport(outcome: early, counter: record.counter) }
        guard let slot = record.slot(.token), let binding = slot.token else { throw ServiceError.tokenNotEnabled }
        let card = try openCardForBoth(binding, interaction)
        defer { card.close() }
        let pin = try readAttemptPIN(interaction, .pin, record: record)
        return try finishBoth(card: card, counter: record.counter, interaction) { () throws -> VerifyReport in
            let shared = try cardSecret(card, binding: binding, interaction)
            let tokenKey = try TokenKeys.tokenKey(sharedSecret: shared, binding: binding, salt: [UInt8](slot.kdf.salt))
            guard let opened = slot.open(keyEncryptionKey: tokenKey, user: user) else {
                throw TokenFailure(
                    kind: .refused,
                    reason: "card \(card.label) does not open the token slot (was its "
                        + "decryption key replaced?)", cardTriesLeft: card.pinTriesNow())
            }
            // The card's answer crossed the line and opened the token slot: whatever the PIN does, that answer must
            // not open it again. A success re-seals (or removes) the slot; a failure re-seals it here.
            func retire() {
                try? store.withLock(user: user) { () throws in
                    guard var record = try store.load(user: user) else { return }
                    if try retireTokenChallenge(binding.ephemeralPublicKey, record: &record, vaultKey: opened) {
                        try store.save(record)
                    }
                }
            }
            let report: VerifyReport
            do {
                report = try countedAttempt(pin: pin) { record, vaultKey in
                    guard let current = record.slot(.token),
                        current.token?.ephemeralPublicKey == binding.ephemeralPublicKey
                    else {
                        throw TokenFailure(
                            kind: .unavailable,
                            reason: "the token slot was re-sealed by another verification "
                                + "while the card was asked; try again")
                    }
                    guard let currentBinding = current.token else { throw ServiceError.tokenNotEnabled }
                    try perform(
                        step, record: &record, vaultKey: vaultKey, pin: pin, binding: currentBinding, card: card,
                        interaction)
                }
            } catch {
                retire()
                throw error
            }
            if case .verified = report.outcome {} else { retire() }
            return report
        }
    }

    /// What a verification with both slots does once both opened, under the user's lock: re-seal the token slot,
    /// remove it, or replace both slots with one composite slot (`step`).
    func perform(
        _ step: StepAfterBoth, record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes, pin: borrowing PIN,
        binding: TokenBinding, card: any TokenApplication, _ interaction: some Interaction
    ) throws {
        switch step {
        case .reseal:
            try sealToken(record: &record, vaultKey: vaultKey, binding: binding, reader: card.reader)
        case .removeToken:
            record.setSlot(.token, nil)
            logger.info("token disabled", [("user", user), ("method", "both")])
            interaction.report(.typeChanged(type: .token, enabled: false))
        case .rebind:
            // The composite slot takes the PIN slot's and the token slot's place: from now on no copy of the
            // record opens without the card.
            try store.save(record)  // the PIN was right: keep the restored counter whatever happens next
            var rebound = binding
            rebound.reader = card.reader
            try sealTokenSlots(record: &record, vaultKey: vaultKey, pin: pin, binding: rebound, mode: .both)
            record.policy.mode = .both
            record.updated = time.now
            logger.info("token re-bound", [("user", user), ("card", card.label), ("mode", "both")])
            interaction.report(.typeChanged(type: .token, enabled: true))
        }
    }
}
