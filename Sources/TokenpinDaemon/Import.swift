import Foundation
import TokenpinCore
import TokenpinProtocol
import TokenpinService

extension Daemon {
    /// `import`: stores a record the user brings, once: an existing daemon record is never replaced.
    ///
    /// The record must decode, pass the structural checks, belong to `user`, and ask for no more memory than
    /// the budget; its counter is capped at `retries-max`.
    func importRecord(_ bytes: [UInt8], user: String, configuration: Configuration) throws(ServiceError) -> String {
        let path = store.recordPath(for: user)
        var record: EnrolmentRecord
        do {
            record = try RecordStore.decode(Data(bytes), path: "imported record", user: user)
        } catch {
            throw .store(error)
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
