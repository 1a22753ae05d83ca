import FoundationEssentials

// The record as its file keeps it, so that a save can remember what the next read would decode (`RecentRecord`).

extension EnrolmentRecord {
    /// The record as `RecordStore.decode` reads it back from what `RecordStore.encode` writes for it: every date
    /// rounded down to the second (`RecordDate.stored`), everything else as it is. Nil when a date is one the file
    /// does not keep exactly; such a record is decoded again when read.
    var asStored: EnrolmentRecord? {
        var record = self
        guard let created = RecordDate.stored(created), let updated = RecordDate.stored(updated),
            let counter = counter.asStored
        else { return nil }
        record.created = created
        record.updated = updated
        record.counter = counter
        if let attempts = otherAttempts {
            guard let stored = attempts.asStored else { return nil }
            record.otherAttempts = stored
        }
        for index in record.slots.indices {
            guard let created = RecordDate.stored(record.slots[index].created) else { return nil }
            record.slots[index].created = created
        }
        return record
    }
}

extension RetryCounter {
    /// The counter with its dates as the file keeps them; nil when one is not kept exactly.
    fileprivate var asStored: RetryCounter? {
        var counter = self
        guard let lastAttemptAt = storedDate(lastAttemptAt), let lockedAt = storedDate(lockedAt) else { return nil }
        counter.lastAttemptAt = lastAttemptAt
        counter.lockedAt = lockedAt
        return counter
    }
}

extension OtherAttempts {
    /// The attempts with their dates as the file keeps them; nil when one is not kept exactly.
    fileprivate var asStored: OtherAttempts? {
        var attempts = self
        guard let lockedAt = storedDate(lockedAt) else { return nil }
        attempts.lockedAt = lockedAt
        if let at = last?.at {
            guard let stored = RecordDate.stored(at) else { return nil }
            attempts.last?.at = stored
        }
        return attempts
    }
}

/// An optional date as the file keeps it: `.some(nil)` for no date, nil when the date is not kept exactly.
private func storedDate(_ date: Date?) -> Date?? {
    guard let date else { return .some(nil) }
    return RecordDate.stored(date).map { .some($0) }
}
