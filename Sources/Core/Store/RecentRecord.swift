import FoundationEssentials
import Synchronization

/// The record a store decoded last, with the bytes it was decoded from: a read that finds the same bytes in the
/// same file for the same user returns it instead of decoding the JSON again.
///
/// A verify reads the record twice, once to choose the way and once under the user's lock; in one process the
/// second read usually finds what the first did. Only the decoding is saved: every read still opens the file
/// (no symlink), checks its owner, mode and size and reads all of it, and any difference in the bytes decodes
/// them afresh, with every check. Thread safe; copies of a store share it.
final class RecentRecord: Sendable {
    private struct Entry {
        var path: String
        var user: String?
        var bytes: Data
        var record: EnrolmentRecord
    }

    private let entry = Mutex<Entry?>(nil)
    private let reuseCount = Atomic<Int>(0)

    /// How many reads returned the remembered record (for tests).
    var reuses: Int { reuseCount.load(ordering: .relaxed) }

    /// The record decoded from exactly `bytes` read from `path` for `user`, if that was the last one decoded.
    func record(path: String, user: String?, bytes: Data) -> EnrolmentRecord? {
        let found = entry.withLock { entry -> EnrolmentRecord? in
            guard let entry, entry.path == path, entry.user == user, entry.bytes == bytes else { return nil }
            return entry.record
        }
        if found != nil { reuseCount.add(1, ordering: .relaxed) }
        return found
    }

    /// Remembers what `bytes` from `path` decoded to for `user`, forgetting the one before.
    func remember(_ record: EnrolmentRecord, path: String, user: String?, bytes: Data) {
        entry.withLock { $0 = Entry(path: path, user: user, bytes: bytes, record: record) }
    }
}
