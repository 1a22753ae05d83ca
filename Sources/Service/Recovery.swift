import FoundationEssentials
internal import TokenpinCore

// Resetting the PIN with the recovery key: a counted check of the key, then a new PIN.

extension PINService {
    /// Resets with the recovery key: asks for it, checks it (counted, before the check), then sets a new PIN and
    /// clears the lock.
    package func reset(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport {
        try guarded { () throws -> VerifyReport in
            _ = try loadRecord()
            let typed = try interaction.readSecret(.recoveryKey)
            let recovery = try Self.parseRecoveryKey(typed)
            return try store.withLock(user: user) { () throws -> VerifyReport in
                guard var record = try store.load(user: user) else {
                    throw ServiceError.notEnrolled(user: user, path: recordPath)
                }
                guard let slot = record.slot(.recovery) else {
                    throw StoreError(.corrupt, path: recordPath, "record has no recovery slot")
                }
                let delay = RetryCounter.recoveryDelay(
                    failures: record.counter.recoveryFailures,
                    lastAttempt: record.counter.lastAttemptAt, now: time.now,
                    schedule: configuration.failDelay)
                if delay > 0 { return VerifyReport(outcome: .delayed(seconds: delay), counter: record.counter) }
                record.counter.countRecoveryFailure()
                record.counter.lastAttemptAt = time.now
                try store.save(record)
                let kek = try deriveKey(slot.kdf, from: recovery)
                guard let vaultKey = slot.open(keyEncryptionKey: kek, user: user) else {
                    logger.info("wrong recovery key", [("user", user)])
                    return VerifyReport(
                        outcome: .rejected(remaining: record.counter.remaining, lastTry: false),
                        counter: record.counter)
                }
                record.counter.recoveryFailures = 0
                // The key was right: keep that whatever the new PIN step does (a refusal, a broken pin-check).
                try store.save(record)
                let newPIN = try readNewPIN(interaction)
                let kdf = try chooseKDF()
                let newKEK = try deriveKey(kdf, from: newPIN.secret)
                let pinSlot = try VaultSlot.seal(
                    vaultKey, keyEncryptionKey: newKEK, kind: .pin, kdf: kdf, user: user,
                    created: time.now)
                record.setSlot(.pin, pinSlot)
                if record.slot(.composite) != nil {
                    // The composite slot needs the old PIN; the token binding must be made again.
                    record.setSlot(.composite, nil)
                    record.policy.mode = .either
                }
                record.counter.restore(max: configuration.retriesMax)
                record.updated = time.now
                try store.save(record)
                interaction.report(.reset)
                return VerifyReport(outcome: .verified(method: .recovery), counter: record.counter)
            }
        }
    }

    /// Reads a typed recovery key; a malformed one is an error that counts nothing.
    static func parseRecoveryKey(_ typed: borrowing SecretBytes) throws(ServiceError) -> SecretBytes {
        do {
            return try RecoveryKey.parse(typed)
        } catch {
            throw .malformedRecoveryKey(
                error == .malformed
                    ? "a recovery key has 30 characters in six groups of five"
                    : error == .invalidCharacter
                        ? "a character is not one a recovery key uses, so its check fails (a typo?)"
                        : "its check characters do not match (a typo?)")
        }
    }
}

extension RetryCounter {
    /// The pause before the next recovery-key attempt: the `fail-delay` schedule applied to wrong recovery keys.
    static func recoveryDelay(failures: Int, lastAttempt: Date?, now: Date, schedule: [Int]) -> Int {
        var probe = RetryCounter(max: 1)
        probe.failures = failures
        probe.lastAttemptAt = lastAttempt
        return probe.delay(at: now, schedule: schedule)
    }
}
