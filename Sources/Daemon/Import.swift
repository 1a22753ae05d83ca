import FoundationEssentials
import TokenpinCore
import TokenpinProtocol
import TokenpinService

extension Daemon {
    /// `import`: stores a record the user brings, once: an existing daemon record is never replaced.
    ///
    /// The record must decode, pass the structural checks, belong to `user`, and ask for no more memory than
    /// the budget; its counter is capped at `retries-max`. A user who is not root brings the PIN and the recovery
    /// key only: token and composite slots are dropped (the user binds again, under `card-bind`), so no record
    /// can carry a binding to a card its user may not touch. A record whose PIN only opens with a card (`mode =
    /// both`) is refused then. Root's import keeps every slot.
    func importRecord(
        _ bytes: [UInt8], user: String, configuration: Configuration, peer: Peer
    ) throws(ServiceError) -> String {
        let path = store.recordPath(for: user)
        var record: EnrolmentRecord
        do {
            record = try RecordStore.decode(Data(bytes), path: "imported record", user: user)
        } catch {
            throw .store(error)
        }
        if !peer.isRoot && record.tokenEnabled {
            guard record.slot(.pin) != nil else {
                throw .permissionDenied(
                    "the record's PIN opens only with its card (mode = both); through tokenpind a user imports the PIN "
                        + "and recovery key only: switch the token off in local mode first, or ask root to import it")
            }
            record.setSlot(.token, nil)
            record.setSlot(.composite, nil)
            record.policy.mode = .either
            logger.info("import: the card binding was dropped; bind again with toggle token on", [("user", user)])
        }
        if let heavy = record.slots.first(where: { !budget.fits($0.kdf.memoryKiB) }) {
            throw .configuration(
                "the record's \(heavy.kind.rawValue) slot needs \(heavy.kdf.memoryKiB / 1024) MiB, more than daemon-kdf-memory"
            )
        }
        if record.counter.max > configuration.retriesMax {
            record.counter.max = configuration.retriesMax
            record.counter.remaining = min(record.counter.remaining, configuration.retriesMax)
        }
        do {
            try store.withLock(user: user) { () throws -> Void in
                if try store.load(user: user) != nil {
                    throw ServiceError.alreadyEnrolled(user: user, path: path)
                }
                try store.save(record)
            }
        } catch let error as ServiceError {
            throw error
        } catch let error as StoreError {
            throw .store(error)
        } catch {
            throw .input("import failed: \(error)")
        }
        logger.info("record imported", [("user", user)])
        hub.publish(user: user, name: "created", fields: [JSONMember("imported", .bool(true))])
        return path
    }
}
