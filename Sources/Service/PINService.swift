import FoundationEssentials
package import TokenpinCore

/// The PIN operations for one user: enrol, verify, change, reset, status, types, toggle.
///
/// Used in process by the CLI (local mode) and by the daemon. Every counted attempt follows invariant 1:
/// under the user's lock, the decremented counter is saved before the key derivation runs, and a success
/// restores it; a failure to save means no verification.
///
/// This file holds enrolment, the counted attempt and the PIN change; each other capability has its own file:
/// Verification.swift (the verifier), CardLocation.swift (the card locator), Binding.swift (the binder),
/// CardPIN.swift (the card's own PIN), Recovery.swift (reset with the recovery key), Status.swift.
package struct PINService: Sendable {
    /// Where records live.
    package let store: RecordStore
    /// The settings.
    package var configuration: Configuration
    /// The user whose record this service acts on.
    package let user: String
    /// The clock.
    package let time: any TimeSource
    /// Debug logging; never receives a secret.
    package let logger: Logger
    /// Test seams.
    package var hooks: Hooks
    /// Where cards come from (PC/SC readers, the simulator), or nil for a PIN-only service.
    package var cards: (any CardReaders)?
    /// Which reader or card to use when several are present.
    package var selection: CardSelection
    /// Where PKCS#11 tokens are found (`pkcs11-module`) and how the helper runs; set from the configuration.
    package var pkcs11: PKCS11Access
    /// Admits Argon2id derivations to a shared memory budget (the daemon's); nil: no budget (local mode).
    package var derivationGate: (any DerivationGate)?
    /// Which cards operations may reach: `.any` in local mode; the daemon sets `.boundCardOnly` for non-root peers.
    package var cardScope: CardScope = .any
    /// Cards the site refuses (`/etc/tokenpin/revoked.d`): no PIN is sent to them and none is bound.
    package var revokedCards = RevokedCards()
    /// Which cards other records bind and who may bind a free one, under `.boundCardOnly` (the daemon's); nil:
    /// no card but the user's own bound one.
    package var cardAccess: (any CardAccess)?
    /// Who asks (the daemon classes each request); `.own` in local mode.
    package var attempt: AttemptContext = .own
    /// Login names of uids, for what the user is told about other users' attempts (the daemon's lookup).
    package var invokerNames: (@Sendable (UInt32) -> String?)?
    /// Set only by `derive`: takes the vault key a verification opens and keeps the application key derived from
    /// it (Derive/ApplicationKeyRelease.swift).
    var keyRelease: ApplicationKeyRelease?
    /// Whether the caller is root, for `callers = root` (the daemon sets the peer's); nil: this process's user.
    package var callerIsRoot: Bool?

    /// Points where tests inject faults.
    package struct Hooks: Sendable {
        /// Runs right after the decremented counter was written, before the key derivation.
        package var afterCounterPersisted: (@Sendable () throws -> Void)?

        /// No hooks.
        package init(afterCounterPersisted: (@Sendable () throws -> Void)? = nil) {
            self.afterCounterPersisted = afterCounterPersisted
        }
    }

    /// Creates the service.
    package init(
        store: RecordStore, configuration: Configuration, user: String,
        time: any TimeSource = SystemTimeSource(), logger: Logger = .disabled, hooks: Hooks = Hooks(),
        cards: (any CardReaders)? = nil, selection: CardSelection? = nil
    ) {
        self.cards = cards
        self.selection = selection ?? CardSelection(reader: configuration.reader)
        var pkcs11 = PKCS11Access(module: configuration.pkcs11Module)
        pkcs11.timeoutMilliseconds = configuration.cardTimeoutSeconds * 1000  // `card-timeout` bounds each request
        self.pkcs11 = pkcs11
        self.store = store
        self.configuration = configuration
        self.user = user
        self.time = time
        self.logger = logger.labelled("service")
        self.hooks = hooks
    }

    /// The record file of this user.
    package var recordPath: String { store.recordPath(for: user) }

    // MARK: Enrol

    /// Enrols a new PIN: asks for it twice, checks the policy, derives the key, seals the vault key into a PIN
    /// slot and a recovery slot, and saves the record.
    ///
    /// Refuses when a record exists (no way around the counter by enrolling again).
    package func enrol(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult {
        try guarded { () throws -> EnrolmentResult in
            try store.prepare()
            return try store.withLock(user: user) { () throws -> EnrolmentResult in
                if try store.load(user: user) != nil {
                    throw ServiceError.alreadyEnrolled(user: user, path: recordPath)
                }
                let result = try writeNewRecord(interaction)
                logger.info("enrolled", [("user", user), ("kdf", result.kdf.summary)])
                interaction.report(.created)
                return result
            }
        }
    }

    /// Asks for a new PIN twice and saves a new record for it under a new vault key and recovery key; call under
    /// the user's lock. Returns the recovery key, shown once.
    func writeNewRecord(_ interaction: some Interaction) throws -> EnrolmentResult {
        let pin = try readNewPIN(interaction)
        let kdf = try chooseKDF()
        let vaultKey = Vault.newKey()
        let now = time.now
        let kek = try deriveKey(kdf, from: pin.secret)
        let pinSlot = try VaultSlot.seal(
            vaultKey, keyEncryptionKey: kek, kind: .pin, kdf: kdf, user: user, created: now)
        let recovery = RecoveryKey.generate()
        let recoveryKDF = KDFParameters(algorithm: .blake2b)
        let recoveryKEK = try deriveKey(recoveryKDF, from: recovery)
        let recoverySlot = try VaultSlot.seal(
            vaultKey, keyEncryptionKey: recoveryKEK, kind: .recovery, kdf: recoveryKDF, user: user, created: now)
        let record = EnrolmentRecord(
            user: user, created: now, policy: .init(mode: configuration.mode, fallback: configuration.fallback),
            counter: RetryCounter(max: configuration.retriesMax), slots: [pinSlot, recoverySlot])
        try store.save(record)
        try replaceLoginKeyring(vaultKey: vaultKey)
        return EnrolmentResult(recoveryKeyText: RecoveryKey.format(recovery), kdf: kdf, recordPath: recordPath)
    }

    // MARK: Unenrol, and the administrator's reset

    /// Removes the user's record, after a verification as `verify` makes it (`method` forcing one type), or, for an
    /// administrator (root naming the user through tokenpind), without one. The record goes whole: the PIN, the
    /// recovery key and any token binding; what the vault key opened cannot be opened again.
    ///
    /// A wrong PIN counts as in `verify` and removes nothing; locked or delayed, nothing is asked.
    package func unenrol(_ interaction: some Interaction, method: VerificationMethod?, administrator: Bool)
        throws(ServiceError) -> VerifyReport
    {
        let report: VerifyReport
        if administrator {
            let record = try loadRecord()
            report = VerifyReport(outcome: .verified(method: .administrator), counter: record.counter)
        } else {
            report = try verify(interaction, method: method)
        }
        guard case .verified = report.outcome else { return report }
        try guarded { () throws in
            try store.withLock(user: user) { () throws in try store.remove(user: user) }
        }
        logger.warning("unenrolled", [("user", user), ("by", administrator ? "administrator" : "user")])
        interaction.report(.unenrolled)
        return report
    }

    /// Sets a new PIN without the recovery key, for an administrator (root through tokenpind), when the user lost
    /// both: a new PIN twice under the policy. Nothing of the old record can open the vault key, so the result is a
    /// new record: a new vault key and recovery key (shown once, to be handed to the user), a full counter, and no
    /// token binding (the card must be bound again); what the old vault key opened cannot be opened again.
    package func administratorReset(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult {
        try guarded { () throws -> EnrolmentResult in
            return try store.withLock(user: user) { () throws -> EnrolmentResult in
                guard let old = try store.load(user: user) else {
                    throw ServiceError.notEnrolled(user: user, path: recordPath)
                }
                let result = try writeNewRecord(interaction)
                logger.warning(
                    "PIN reset by an administrator without the recovery key",
                    [("user", user), ("token.removed", old.tokenEnabled ? "yes" : "no")])
                interaction.report(.reset)
                return result
            }
        }
    }

    /// The Argon2id parameters for a new PIN slot: fixed by `kdf-memory-mib`/`kdf-passes`, else calibrated.
    package func chooseKDF() throws -> KDFParameters {
        if let memory = configuration.kdfMemoryMiB {
            return .argon2id(
                memoryKiB: Configuration.kibibytes(mebibytes: memory), passes: configuration.kdfPasses ?? 3)
        }
        var calibration = KDFCalibration(targetMilliseconds: configuration.kdfTargetMilliseconds)
        if let passes = configuration.kdfPasses { calibration.minimumPasses = passes }
        guard let derivationGate else { return try calibration.calibrate(timeSource: time).parameters }
        // Calibration runs Argon2id at up to the memory cap: it takes its share of the budget like a derivation.
        return try derivationGate.withMemory(kibibytes: calibration.memoryCapKiB) { () throws -> KDFParameters in
            try calibration.calibrate(timeSource: time).parameters
        }
    }

    // MARK: Counted attempts

    /// The counter an attempt of this class spends: the PIN's own, or for remote and other attempts theirs.
    func reportCounter(_ record: EnrolmentRecord) -> RetryCounter {
        countsApart ? otherCounter(record) : record.counter
    }

    /// The report of an attempt answered before anything was asked (locked, delayed).
    func earlyReport(_ outcome: VerifyOutcome, _ record: EnrolmentRecord) -> VerifyReport {
        var report = VerifyReport(outcome: outcome, counter: reportCounter(record))
        report.countedApart = countsApart && !record.counter.isLocked
        return report
    }

    /// Counts an attempt of this class, before its PIN is checked (invariant 1, on the counter it spends).
    func countAttempt(_ record: inout EnrolmentRecord, at now: Date) {
        if countsApart {
            var others = record.otherAttempts ?? OtherAttempts()
            others.consume(otherAttempt(at: now), maximum: configuration.retriesMax)
            record.otherAttempts = others
        } else {
            record.counter.consumeAttempt(at: now)
        }
    }

    /// Reads the PIN for a counted attempt (`prompt`: `pin` or `current-pin`), with its tries left; a secret that
    /// cannot be the PIN under the policy (`PINPolicy.impossibility`) is refused here, before anything is counted or
    /// a card is asked.
    func readAttemptPIN(_ interaction: some Interaction, _ prompt: SecretPrompt, record: EnrolmentRecord)
        throws(ServiceError) -> PIN
    {
        let pin = PIN(try interaction.readPIN(prompt, remaining: reportCounter(record).remaining))
        if let rule = configuration.policy.impossibility(of: pin) {
            logger.info("not a PIN: not tried, nothing counted", [("user", user), ("rule", rule.rawValue)])
            throw .notAPIN(configuration.policy.shape)
        }
        return pin
    }

    /// One counted PIN attempt under the user's lock; on success `onSuccess` runs with the record and the vault
    /// key before the record is saved again (a change writes its new slot there).
    ///
    /// `slotKind` is `.pin`, or `.composite` with `finishKey` mixing the card's key into the PIN's.
    func countedAttempt(
        pin: borrowing PIN, slotKind: SlotKind = .pin,
        finishKey: (borrowing SecretBytes, VaultSlot) throws -> SecretBytes = { key, _ in key.duplicate() },
        onSuccess: (inout EnrolmentRecord, borrowing SecretBytes) throws -> Void
    ) throws -> VerifyReport {
        try store.withLock(user: user) { () throws -> VerifyReport in
            guard var record = try store.load(user: user) else {
                throw ServiceError.notEnrolled(user: user, path: recordPath)
            }
            if let early = earlyOutcome(record) { return earlyReport(early, record) }
            guard let slot = record.slot(slotKind) else {
                throw ServiceError.tokenUnavailable("mode = both: the PIN alone cannot verify; the token is needed too")
            }
            var kdfTime: UInt64 = 0
            // The derivation's memory is taken before the attempt is counted: a busy daemon answers `busy` with
            // nothing counted. Lock order: the user (daemon), the record (flock), then memory.
            let opened = try withDerivationMemory(for: slot.kdf) { () throws -> SecretBytes? in
                // Invariant 1: count the attempt durably before the PIN is checked.
                let now = time.now
                countAttempt(&record, at: now)
                record.updated = now
                try store.save(record)
                try hooks.afterCounterPersisted?()
                let start = time.monotonicNanoseconds
                let pinKey = try slot.kdf.deriveKey(from: pin.secret)
                let kek = try finishKey(pinKey, slot)
                defer { kdfTime = time.monotonicNanoseconds &- start }
                return slot.open(keyEncryptionKey: kek, user: user)
            }
            guard let vaultKey = opened else { return wrongPINReport(record, kdfNanoseconds: kdfTime) }
            var notice: OtherAttemptsNotice?
            if countsApart {
                record.otherAttempts?.succeeded()
            } else {
                record.counter.restore(max: configuration.retriesMax)
                notice = takeOtherAttempts(&record)
            }
            record.updated = time.now
            try onSuccess(&record, vaultKey)
            try releaseKey(vaultKey)
            try store.save(record)
            logger.info("verified", [("user", user), ("method", "pin"), ("class", attempt.class.rawValue)])
            var report = VerifyReport(
                outcome: .verified(method: .pin), kdfNanoseconds: kdfTime, counter: reportCounter(record))
            report.otherAttempts = notice
            report.countedApart = countsApart
            return report
        }
    }

    /// The report of a counted attempt whose PIN was wrong, on the counter it spent (already saved).
    func wrongPINReport(_ record: EnrolmentRecord, kdfNanoseconds: UInt64) -> VerifyReport {
        let counter = reportCounter(record)
        logger.info(
            "wrong PIN",
            [("user", user), ("pin.remaining", String(counter.remaining)), ("class", attempt.class.rawValue)])
        if counter.isLocked {
            logger.warning(
                "PIN locked: no tries left until a reset", [("user", user), ("class", attempt.class.rawValue)])
        }
        let outcome: VerifyOutcome =
            counter.isLocked ? .locked : .rejected(remaining: counter.remaining, lastTry: counter.remaining == 1)
        var report = VerifyReport(outcome: outcome, kdfNanoseconds: kdfNanoseconds, counter: counter)
        report.countedApart = countsApart
        return report
    }

    /// Locked or delayed before anything is asked, or nil.
    func earlyOutcome(_ record: EnrolmentRecord) -> VerifyOutcome? {
        if record.counter.isLocked { return .locked }
        if countsApart { return earlyOtherOutcome(record) }
        let delay = record.counter.delay(at: time.now, schedule: configuration.failDelay)
        return delay > 0 ? .delayed(seconds: delay) : nil
    }

    // MARK: Change

    /// Changes the PIN: the current PIN (never the token), then the new PIN twice under the policy.
    ///
    /// The lock is held from the check of the current PIN to the write of the new slot. Other slots (the
    /// recovery key, a token binding) keep working: they wrap the same vault key.
    package func change(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport {
        let report = try changeRecord(interaction)
        announceOtherAttempts(report, interaction)
        return report
    }

    /// `change` on the record as it is now.
    func changeRecord(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport {
        try guarded { () throws -> VerifyReport in
            let record = try loadRecord()
            if record.slot(.composite) != nil {
                if countsApart { throw tokenRefusedToThisClass() }
                return try changeBoth(interaction)
            }
            if let early = earlyOutcome(record) { return earlyReport(early, record) }
            let current = try readAttemptPIN(interaction, .currentPIN, record: record)
            return try countedAttempt(pin: current) { record, vaultKey in
                // Save the restored counter first: the current PIN was right, whatever happens next.
                try store.save(record)
                let newPIN = try readNewPIN(interaction) { candidate in
                    candidate.matches(current) ? .sameAsCurrent : nil
                }
                let kdf = try chooseKDF()
                let kek = try deriveKey(kdf, from: newPIN.secret)
                let slot = try VaultSlot.seal(
                    vaultKey, keyEncryptionKey: kek, kind: .pin, kdf: kdf, user: user, created: time.now)
                record.setSlot(.pin, slot)
                record.updated = time.now
                interaction.report(.changed)
            }
        }
    }

    /// `change` in `mode = both`: the current PIN and the card (it must be present), then the new PIN twice;
    /// the composite slot is sealed again with the new PIN and the same card.
    func changeBoth(_ interaction: some Interaction) throws -> VerifyReport {
        try verifyBoth(interaction, prompt: .currentPIN) { record, vaultKey, current in
            try store.save(record)
            let newPIN = try readNewPIN(interaction) { candidate in candidate.matches(current) ? .sameAsCurrent : nil }
            guard let binding = record.slot(.composite)?.token else { throw ServiceError.tokenNotEnabled }
            try sealTokenSlots(record: &record, vaultKey: vaultKey, pin: newPIN, binding: binding, mode: .both)
            record.updated = time.now
            interaction.report(.changed)
        }
    }

    // MARK: New PINs

    /// Asks for a new PIN and its confirmation, checking the policy, `extraRule` (the current PIN on a
    /// change) and the site's `pin-check` program; gives `newPINAttempts` chances.
    func readNewPIN(
        _ interaction: some Interaction,
        extraRule: (borrowing PIN) -> PolicyRule? = { _ in nil }
    ) throws(ServiceError) -> PIN {
        let attempts = max(1, interaction.newPINAttempts)
        var attempt = 0
        while true {
            attempt += 1
            let candidate = PIN(try interaction.readSecret(.newPIN))
            var rule = extraRule(candidate) ?? configuration.policy.violation(for: candidate)
            // The site's own check runs after the built-in policy, on a candidate that passed it.
            let siteRefusal = rule == nil ? try siteCheckRefusal(candidate) : nil
            if siteRefusal != nil { rule = .siteCheck }
            if rule == nil {
                let confirmation = PIN(try interaction.readSecret(.confirmPIN))
                if !candidate.matches(confirmation) { rule = .mismatch }
            }
            guard let rule else { return candidate }
            interaction.report(.policyViolation(rule: rule.rawValue, reason: siteRefusal))
            if attempt >= attempts {
                throw siteRefusal.map { ServiceError.siteCheckRefused(reason: $0) }
                    ?? ServiceError.policyViolation(rule)
            }
        }
    }

    /// The record, or `notEnrolled`.
    func loadRecord() throws(ServiceError) -> EnrolmentRecord {
        do throws(StoreError) {
            if try store.exists(), let record = try store.load(user: user) { return record }
        } catch {
            throw .store(error)
        }
        throw .notEnrolled(user: user, path: recordPath)
    }

    /// Runs `body`, turning every error into a `ServiceError`: the one place the errors of untyped callees (the
    /// record store's lock, the derivation gate, key calibration, the key release) are mapped. Capabilities whose
    /// callees all throw typed errors (the card locator, the card's own PIN) do not pass through here.
    func guarded<R: ~Copyable>(_ body: () throws -> R) throws(ServiceError) -> R {
        do {
            return try body()
        } catch let error as ServiceError {
            throw error
        } catch let error as StoreError {
            throw .store(error)
        } catch let error as CryptoError {
            throw .crypto(error)
        } catch let error as TokenFailure {
            throw error.serviceError
        } catch let error as TokenKeyError {
            // A card key tokenpin cannot use is the token being unavailable, never an I/O error.
            throw .tokenUnavailable(error.description)
        } catch {
            throw .input("unexpected error: \(error)")
        }
    }
}
