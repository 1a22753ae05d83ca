import FoundationEssentials
package import TokenpinCore

// What the record and the token look like (`status`, `types`), and the PIN type that is always on.

extension PINService {
    /// The record's state, without asking for anything.
    package func status() throws(ServiceError) -> StatusReport {
        let record: EnrolmentRecord?
        do throws(StoreError) {
            record = try store.exists() ? try store.load(user: user) : nil
        } catch {
            throw .store(error)
        }
        let binding = record?.slot(.token)?.token ?? record?.slot(.composite)?.token
        let token = cards == nil ? nil : tokenStatus(binding: binding)
        let inForce = record.flatMap(modeInForce)
        return StatusReport(
            user: user, recordPath: recordPath, enrolled: record != nil,
            remaining: record?.counter.remaining, maximum: record?.counter.max,
            locked: record?.counter.isLocked ?? false, lockedAt: record?.counter.lockedAt,
            delaySeconds: record.map { $0.counter.delay(at: time.now, schedule: configuration.failDelay) } ?? 0,
            failures: record?.counter.failures ?? 0,
            kdf: (record?.slot(.pin) ?? record?.slot(.composite))?.kdf,
            types: Self.types(of: record), mode: inForce?.mode ?? record?.policy.mode,
            fallback: record.map { fallbackAllowed($0) ? .allow : .deny },
            token: token, modeSource: inForce?.source
        )
        .withOtherAttempts(record?.otherAttempts, maximum: configuration.retriesMax, names: invokerNames)
    }

    /// The authentication types of a record: the PIN always on, the token on when a card is bound.
    package static func types(of record: EnrolmentRecord?) -> [TypeStatus] {
        let binding = record?.slot(.token)?.token ?? record?.slot(.composite)?.token
        return [
            TypeStatus(type: .pin, enabled: true, canDisable: false),
            TypeStatus(type: .token, enabled: binding != nil, canDisable: true, serial: binding?.serial),
        ]
    }

    /// The authentication types of this user; not enrolled is an error.
    package func types() throws(ServiceError) -> [TypeStatus] {
        Self.types(of: try loadRecord())
    }

    /// `toggle pin on|off`: the PIN type is always on, so `off` is refused and `on` only checks the enrolment.
    package func togglePIN(on: Bool) throws(ServiceError) {
        guard on else { throw .pinAlwaysEnabled }
        _ = try types()
    }
}

extension Array where Element == TypeStatus {
    /// The serial of the card the token type is bound to, or nil when the token is off.
    var boundSerial: String? { first { $0.type == .token && $0.enabled }?.serial }
}
