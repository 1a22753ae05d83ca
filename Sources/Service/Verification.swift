import FoundationEssentials
internal import TokenpinAPDU
package import TokenpinCore

// The verifier: one verification plan chosen from the record, the configuration and the method asked for (the
// PIN, the token, the token with fallback to the PIN, or both), then followed by one executor.

extension PINService {
    // MARK: Verify

    /// Verifies the user: the token first when it is enabled and present, else (or on failure, with
    /// `fallback = allow`) the PIN; `method` forces one. In `mode = both`, the PIN and the card together.
    ///
    /// Token failures never consume PIN tries.
    package func verify(_ interaction: some Interaction, method: VerificationMethod? = nil) throws(ServiceError)
        -> VerifyReport
    {
        let report = try guarded { () throws -> VerifyReport in try verifyRecord(interaction, method: method) }
        announceOtherAttempts(report, interaction)
        return report
    }

    /// Verifies the PIN: checks lock and delay, asks for the PIN, then runs one counted attempt.
    package func verifyPIN(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport {
        try guarded { () throws -> VerifyReport in try verifyPIN(interaction, record: try loadRecord()) }
    }

    /// `verifyPIN` on a record already read without the lock (the counted attempt reads it again under the lock).
    /// `retiringChallenge` is a token challenge a failed token attempt may have sent to the card: a success
    /// re-seals the token slot under a fresh one (`retireTokenChallenge`).
    func verifyPIN(_ interaction: some Interaction, record: EnrolmentRecord, retiringChallenge: Data? = nil) throws
        -> VerifyReport
    {
        if let early = earlyOutcome(record) { return earlyReport(early, record) }
        let pin = try readAttemptPIN(interaction, .pin, record: record)
        return try countedAttempt(pin: pin) { record, vaultKey in
            try retireTokenChallenge(retiringChallenge, record: &record, vaultKey: vaultKey)
        }
    }

    /// Tells the user what remote and other attempts did, at the own or local success that cleared them.
    func announceOtherAttempts(_ report: VerifyReport, _ interaction: some Interaction) {
        if let notice = report.otherAttempts { interaction.report(.otherAttempts(notice)) }
    }

    /// `verify` on the record as it is now: the plan chosen, then followed.
    func verifyRecord(_ interaction: some Interaction, method: VerificationMethod?) throws -> VerifyReport {
        let record = try loadRecord()
        return try verify(interaction, record: record, following: verificationPlan(for: record, method: method))
    }

    /// The one verification `record` allows for `method` (nil: the record's and the configuration's choice) and
    /// this class of attempt. A method the record or the class refuses is thrown here, before anything is asked.
    func verificationPlan(for record: EnrolmentRecord, method: VerificationMethod?) throws(ServiceError)
        -> VerificationPlan
    {
        if method != .pin, let wanted = selection.serial, let bound = Self.types(of: record).boundSerial,
            !CardSelection(serial: wanted).accepts(serial: bound)
        {
            throw .tokenUnavailable(
                "--serial \(wanted) is not the card bound to \(user) "
                    + "(card \(cardLabel(serial: bound))); the card PIN goes to no other card")
        }
        if countsApart {
            // Remote and other attempts get the PIN only: the card stays with the person at this machine.
            let tokenNeeded =
                record.slot(.composite) != nil || modeInForce(record)?.source == .configuration
                || (record.slot(.token) != nil && !fallbackAllowed(record))
            if tokenNeeded || method == .token { throw tokenRefusedToThisClass() }
            return .pin
        }
        if record.slot(.composite) != nil {
            if method == .pin { throw .tokenUnavailable("mode = both: the PIN alone cannot verify") }
            return .composite
        }
        guard record.slot(.token) != nil else {
            if method == .token { throw .tokenNotEnabled }
            return .pin
        }
        if modeInForce(record)?.source == .configuration {
            if method == .pin { throw .tokenUnavailable("mode = both (configuration): the PIN alone cannot verify") }
            return .tokenAndPIN
        }
        if method == .pin { return .pin }
        return .token(fallback: method == nil && fallbackAllowed(record))
    }

    /// Follows `plan` on `record` (read without the lock; each step reads it again under the lock).
    func verify(_ interaction: some Interaction, record: EnrolmentRecord, following plan: VerificationPlan) throws
        -> VerifyReport
    {
        switch plan {
        case .pin: try verifyPIN(interaction, record: record)
        case .token(let fallback): try verifyTokenFirst(interaction, record: record, fallback: fallback)
        case .composite: try verifyBoth(interaction, prompt: .pin) { _, _, _ in }
        case .tokenAndPIN: try verifyTokenAndPIN(interaction)
        }
    }

    /// The card opens the token slot; when it cannot and `fallback` allows, one counted PIN attempt instead (which
    /// retires a challenge the card may have seen). Without fallback a refusal by the card is `tokenRejected`.
    func verifyTokenFirst(_ interaction: some Interaction, record: EnrolmentRecord, fallback: Bool) throws
        -> VerifyReport
    {
        let failure: TokenFailure
        do {
            return try store.withLock(user: user) { () throws -> VerifyReport in
                // The slot as it is now: another verification may have re-sealed it since it was read.
                guard let current = try store.load(user: user) else {
                    throw ServiceError.notEnrolled(user: user, path: recordPath)
                }
                return try verifyToken(record: current, interaction)
            }
        } catch let tokenFailure as TokenFailure {
            failure = tokenFailure
        }
        interaction.report(
            .tokenFailed(reason: failure.reason, fallback: fallback, cardTriesLeft: failure.cardTriesLeft))
        guard fallback else {
            guard failure.kind == .refused else { throw failure.serviceError }
            return VerifyReport(
                outcome: .tokenRejected(reason: failure.reason), tokenFailure: failure.reason, counter: record.counter)
        }
        var report = try verifyPIN(interaction, record: record, retiringChallenge: failure.sentChallenge)
        report.tokenFailure = failure.reason
        return report
    }

    /// `fallback = deny` in the configuration or in the record wins.
    func fallbackAllowed(_ record: EnrolmentRecord) -> Bool {
        configuration.fallback == .allow && record.policy.fallback == .allow
    }

    /// One token verification, under the user's lock: open the token slot with the card, then re-seal it under
    /// a fresh challenge (made while the card works) so the card answer just used never opens it again. The PIN
    /// counter is not touched.
    func verifyToken(record: EnrolmentRecord, _ interaction: some Interaction) throws -> VerifyReport {
        guard let slot = record.slot(.token), let binding = slot.token else { throw ServiceError.tokenNotEnabled }
        let next = AgreementInAdvance(self, binding: binding)  // made while the card works
        let opened = try openTokenSlot(slot, interaction)
        var record = record
        try sealToken(record: &record, vaultKey: opened.vaultKey, agreement: next.take(reader: opened.card.reader))
        try releaseKey(opened.vaultKey)
        let notice = takeOtherAttempts(&record)
        record.updated = time.now
        try store.save(record)
        logger.info("verified", [("user", user), ("method", "token")])
        var report = VerifyReport(
            outcome: .verified(method: .token), kdfNanoseconds: opened.nanoseconds, counter: record.counter,
            card: opened.card)
        report.otherAttempts = notice
        return report
    }

    /// The vault key a card opened, and which card it was.
    struct OpenedTokenSlot: ~Copyable {
        let vaultKey: SecretBytes
        let card: VerifiedCard
        let nanoseconds: UInt64
    }

    /// Finds the enrolled card, VERIFYs its PIN, has it compute the shared secret (PSO:DECIPHER), derives the
    /// token key and opens `slot`. The shared secret and the key are wiped before this returns.
    func openTokenSlot(_ slot: VaultSlot, _ interaction: some Interaction) throws -> OpenedTokenSlot {
        guard let binding = slot.token else {
            throw StoreError(.corrupt, path: recordPath, "token slot without a binding")
        }
        let card = try openEnrolledCard(binding)
        defer { card.close() }
        let shared = try cardSecret(card, binding: binding, interaction)
        let start = time.monotonicNanoseconds
        let kek = try TokenKeys.tokenKey(sharedSecret: shared, binding: binding, salt: [UInt8](slot.kdf.salt))
        let vaultKey = slot.open(keyEncryptionKey: kek, user: user)
        guard let vaultKey else {
            throw TokenFailure(
                kind: .refused,
                reason: "card \(card.label) does not open the token slot (was its decryption key replaced?)",
                cardTriesLeft: card.pinTriesNow(), sentChallenge: binding.ephemeralPublicKey)
        }
        return OpenedTokenSlot(
            vaultKey: vaultKey,
            card: VerifiedCard(serial: card.identity, reader: card.reader, removalWatch: card.removalWatch),
            nanoseconds: time.monotonicNanoseconds &- start)
    }

    /// Asks for the card PIN (showing the card's tries left), verifies it on the card and has the bound key
    /// answer the slot's challenge: VERIFY and the key operation (PSO:DECIPHER, GENERAL AUTHENTICATE) in one
    /// transaction.
    func cardSecret(
        _ card: any TokenApplication, binding: TokenBinding, _ interaction: some Interaction,
        pin held: consuming SecretBytes? = nil
    ) throws -> SecretBytes {
        let tries = card.pinTriesLeft
        let algorithm = try bindingAlgorithm(binding)
        let cardPIN: SecretBytes
        switch consume held {
        case .some(let given):
            // Asked (and checked on the card) earlier in the same operation: `--generate-key`.
            cardPIN = given
        case .none:
            guard tries > 0 else { throw failure(.blocked, card: card.label) }
            if let keypad = keypad(for: card, interaction) {
                return try keypadSecret(card, keypad, binding: binding, algorithm: algorithm, interaction)
            }
            cardPIN = try readCardPIN(card, interaction)
        }
        do {
            return try card.answer(pin: cardPIN, binding: binding, algorithm: algorithm)
        } catch {
            throw answerFailure(error, card: card, binding: binding)
        }
    }

    /// A card's refusal to answer the binding's challenge, the challenge marked as sent when the key was asked.
    func answerFailure(_ error: TokenCardError, card: any TokenApplication, binding: TokenBinding) -> TokenFailure {
        var failure = failure(error, card: card.label)
        switch error {
        case .wrongPIN, .blocked, .keypadRefused: break  // VERIFY refused or never sent: the key was not asked
        default: failure.sentChallenge = binding.ephemeralPublicKey
        }
        return failure
    }

    /// `mode = both`: the card first (its own counter), then one counted PIN attempt on the composite slot, which
    /// is then re-sealed under a fresh challenge. `onSuccess` gets the record, the vault key and the PIN.
    func verifyBoth(
        _ interaction: some Interaction, prompt: SecretPrompt,
        onSuccess: (inout EnrolmentRecord, borrowing SecretBytes, borrowing PIN) throws -> Void
    )
        throws -> VerifyReport
    {
        let record = try loadRecord()
        if let early = earlyOutcome(record) { return VerifyReport(outcome: early, counter: record.counter) }
        guard let slot = record.slot(.composite), let binding = slot.token else { throw ServiceError.tokenNotEnabled }
        let card = try openCardForBoth(binding, interaction)
        defer { card.close() }
        let pin = try readAttemptPIN(interaction, prompt, record: record)
        return try finishBoth(card: card, counter: record.counter, interaction) { () throws -> VerifyReport in
            let shared = try cardSecret(card, binding: binding, interaction)
            let pinKeyHolder = KeyHolder()
            return try countedAttempt(
                pin: pin, slotKind: .composite,
                finishKey: { pinKey, slot in
                    guard let current = slot.token else {
                        throw StoreError(.corrupt, path: recordPath, "composite slot without a binding")
                    }
                    guard current.ephemeralPublicKey == binding.ephemeralPublicKey else {
                        // The card answered for a key another verification has replaced meanwhile.
                        throw TokenFailure(
                            kind: .unavailable,
                            reason: "the token slot was re-sealed by another verification while "
                                + "the card was asked; try again")
                    }
                    pinKeyHolder.key = pinKey.duplicate()
                    let tokenKey = try TokenKeys.tokenKey(
                        sharedSecret: shared, binding: current, salt: [UInt8](slot.kdf.salt))
                    return try TokenKeys.compositeKey(
                        tokenKey: tokenKey, pinKey: pinKey, binding: current,
                        salt: [UInt8](slot.kdf.salt))
                },
                onSuccess: { record, vaultKey in
                    // Re-seal under a fresh challenge: the PIN's key and KDF parameters stay, the card's part changes.
                    guard let slot = record.slot(.composite), let current = slot.token,
                        let pinKey = pinKeyHolder.key.take()
                    else {
                        throw StoreError(.corrupt, path: recordPath, "composite slot vanished during verification")
                    }
                    try sealComposite(
                        record: &record, vaultKey: vaultKey, pinKey: pinKey, kdf: slot.kdf,
                        agreement: freshAgreement(current, reader: card.reader))
                    try onSuccess(&record, vaultKey, pin)
                })
        }
    }

    /// The bound card for a verification that needs the card and the PIN: a card that cannot be opened is
    /// reported as a token failure without fallback (there is none in `mode = both`) and thrown.
    func openCardForBoth(_ binding: TokenBinding, _ interaction: some Interaction) throws(ServiceError)
        -> any TokenApplication
    {
        do {
            return try openEnrolledCard(binding)
        } catch {
            interaction.report(.tokenFailed(reason: error.reason, fallback: false))
            throw error.serviceError
        }
    }

    /// The end of a verification that needs the card and the PIN (`mode = both`, from the record or from the
    /// configuration): a success names both and the card it was made with; a card failure is reported with no
    /// fallback and answered as `tokenRejected` when the card refused, anything else is thrown.
    func finishBoth(
        card: any TokenApplication, counter: RetryCounter, _ interaction: some Interaction,
        _ attempt: () throws -> VerifyReport
    ) throws -> VerifyReport {
        do {
            var report = try attempt()
            if case .verified = report.outcome {
                report.outcome = .verified(method: .both)
                report.card = VerifiedCard(serial: card.identity, reader: card.reader, removalWatch: card.removalWatch)
            }
            return report
        } catch let failure as TokenFailure {
            interaction.report(
                .tokenFailed(reason: failure.reason, fallback: false, cardTriesLeft: failure.cardTriesLeft))
            if failure.kind == .refused {
                return VerifyReport(
                    outcome: .tokenRejected(reason: failure.reason), tokenFailure: failure.reason, counter: counter)
            }
            throw failure.serviceError
        }
    }
}

/// Carries the PIN's key from a counted attempt's key derivation to its success handler, so a re-seal needs no
/// second Argon2id run. The key is wiped when taken and dropped, or with the holder.
final class KeyHolder {
    var key: SecretBytes?
}

/// How one verification goes, chosen once from the record, the configuration, the method asked for and the class
/// of attempt (`PINService.verificationPlan`), then followed by one executor (`verify(_:record:following:)`).
enum VerificationPlan: Sendable, Equatable {
    /// The PIN alone: one counted attempt on the PIN slot.
    case pin
    /// The card opens the token slot; with `fallback` (`fallback = allow`, no method forced) a card that cannot
    /// hands over to one counted PIN attempt. Token failures never consume PIN tries.
    case token(fallback: Bool)
    /// `mode = both` from the record: the card and one counted PIN attempt open the composite slot together.
    case composite
    /// `mode = both` from the configuration on a record bound in `either`: the card opens the token slot, then one
    /// counted PIN attempt the PIN slot; both must succeed.
    case tokenAndPIN
}
