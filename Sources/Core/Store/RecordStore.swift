import FoundationEssentials
internal import TokenpinSystem

/// The directory of enrolment records: one file per user, guarded by a lock file.
///
/// A record file is either the legacy single JSON document, replaced atomically (a temporary file in the same
/// directory, synced, renamed over the record, the directory synced), or two copies of the JSON in one
/// preallocated file, updated in place with one `fdatasync` (`RecordCopies`). Both are always read; `writeFormat`
/// says which a save writes, and a save in the two-copy format upgrades a legacy file once. Invariant 3: records
/// are 0600 in a 0700 directory; a directory or record that others can write or read, that belongs to someone
/// else, or that is a symlink is refused. Invariant 2: `withLock` holds an exclusive `flock` on the user's lock
/// file across a whole operation, so processes take turns.
public struct RecordStore: Sendable {
    /// The directory.
    public let directory: String
    /// The uid that must own the directory and records (the effective uid).
    public let owner: UInt32
    /// The largest record accepted; anything bigger is not ours.
    public static let maximumRecordSize = 1 << 20
    /// The longest `withLock` waits for another process's lock (nil: as long as it takes, as local mode's
    /// processes queue behind each other's key derivations). tokenpind bounds it by `daemon-wait-timeout`.
    public var lockWaitSeconds: Double?
    /// The clock that bounds `lockWaitSeconds` (its monotonic reading); tests move a hand-set one.
    public var time: any TimeSource = SystemTimeSource()
    /// The record decoded last and its bytes, so that reading the same bytes again does not decode them again.
    let recent = RecentRecord()
    /// The format a save writes (both are always read).
    public var writeFormat: RecordFormat = .fromEnvironment
    /// A test hook for the two-copy save: given the step, the bytes a write replaces and the bytes it would
    /// write, it returns nil to let the write happen, or the bytes that reach the file before a simulated crash
    /// (the save then throws `.io` without syncing or going on).
    var tornWrite: (@Sendable (RecordCopies.Step, _ old: [UInt8], _ new: [UInt8]) -> [UInt8]?)?

    /// A store in `directory`, owned by the effective user.
    public init(directory: String) {
        self.init(directory: directory, owner: CurrentProcess.effectiveUserID)
    }

    /// A store in `directory`, owned by `owner`.
    public init(directory: String, owner: UInt32) {
        self.directory = directory
        self.owner = owner
    }

    /// The default local store: `$XDG_STATE_HOME/tokenpin`, else `~/.local/state/tokenpin`.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/tokenpin" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? Paths.homeDirectory()
        return home + "/.local/state/tokenpin"
    }

    /// The record file of `user`.
    public func recordPath(for user: String) -> String { path(of: .record, user: user) }
    /// The lock file of `user`.
    public func lockPath(for user: String) -> String { directory + "/" + user + ".lock" }
    /// The temporary file a save writes before renaming.
    public func temporaryPath(for user: String) -> String { AtomicFile.temporaryPath(for: recordPath(for: user)) }

    /// Checks a user name: letters, digits, `_`, `-`, `.`, not starting with `.` or `-`, at most 64 bytes.
    public static func validate(user: String) -> Bool {
        let bytes = Array(user.utf8)
        guard !bytes.isEmpty, bytes.count <= 64, bytes[0] != UInt8(ascii: "."), bytes[0] != UInt8(ascii: "-") else {
            return false
        }
        return bytes.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
    }

    // MARK: Directory

    /// Creates the directory (0700) if needed and checks that only its owner can write it.
    public func prepare() throws(StoreError) {
        let info: FileStatus
        do {
            info = try FileStatus.ofLink(directory)
        } catch {
            guard error == .noSuchFileOrDirectory else {
                throw storeError(error, directory, "cannot inspect the store directory")
            }
            try createDirectory()
            do {
                info = try FileStatus.ofLink(directory)
            } catch {
                throw storeError(error, directory, "cannot inspect the store directory")
            }
        }
        try checkDirectory(info)
    }

    /// Checks the directory without creating it; false when it does not exist.
    public func exists() throws(StoreError) -> Bool {
        let info: FileStatus
        do {
            info = try FileStatus.ofLink(directory)
        } catch {
            if error == .noSuchFileOrDirectory { return false }
            throw storeError(error, directory, "cannot inspect the store directory")
        }
        try checkDirectory(info)
        return true
    }

    private func createDirectory() throws(StoreError) {
        // Parents are made as `mkdir -p` would; the store itself is 0700.
        let parent = Paths.parent(of: directory)
        if !parent.isEmpty, !FileManager.default.fileExists(atPath: parent) {
            do {
                try FileManager.default.createDirectory(
                    atPath: parent, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreError(.io, path: parent, "cannot create the parent directory")
            }
        }
        do {
            try Paths.makeDirectory(directory, mode: 0o700)
        } catch {
            if error != .fileExists { throw storeError(error, directory, "cannot create the store directory") }
        }
    }

    private func checkDirectory(_ info: FileStatus) throws(StoreError) {
        guard info.isDirectory else {
            throw StoreError(.insecure, path: directory, "the store is not a directory (a symlink or a file?)")
        }
        guard info.owner == owner else {
            throw StoreError(
                .insecure, path: directory, "the store directory belongs to uid \(info.owner), not \(owner)")
        }
        guard info.permissions & 0o022 == 0 else {
            throw StoreError(
                .insecure, path: directory,
                "others can write the store directory (mode \(String(info.permissions & 0o777, radix: 8))); run chmod 700 on it"
            )
        }
    }

    // MARK: Locking

    /// Runs `body` holding the exclusive lock of `user`'s record; other processes wait.
    ///
    /// The corresponding C function is `flock`. The lock ends when the descriptor closes, so a crash releases it.
    public func withLock<R: ~Copyable>(user: String, _ body: () throws -> R) throws -> R {
        guard Self.validate(user: user) else { throw StoreError(.invalidUser, path: directory, "invalid user name") }
        let path = lockPath(for: user)
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .readWrite, options: [.create, .noFollow], permissions: 0o600)
        } catch {
            throw storeError(error, path, "cannot open the lock file")
        }
        let acquired: Bool
        do {
            acquired = try lock(file)
        } catch {
            throw storeError(error, path, "cannot lock the record")
        }
        guard acquired else {
            throw StoreError(.busy, path: path, "another process holds the record's lock; try again")
        }
        // The lock ends when the descriptor closes: after the body, or when a crash ends the process.
        return try withExtendedLifetime(file) { try body() }
    }

    /// Takes the exclusive lock on the open lock file `file`, waiting as long as it takes without
    /// `lockWaitSeconds`; false when that wait ran out first. It is held until `file` closes.
    private func lock(_ file: borrowing FileDescriptor) throws(Errno) -> Bool {
        guard let lockWaitSeconds else {
            try file.lockExclusively()
            return true
        }
        // A bounded wait: poll the non-blocking lock until the deadline (flock has no timed form).
        let deadline = time.monotonicNanoseconds &+ UInt64(max(0, min(lockWaitSeconds, 3600)) * 1e9)
        while try !file.tryLockExclusively() {
            guard time.monotonicNanoseconds < deadline else { return false }
            CurrentThread.sleep(for: .milliseconds(10), resumeAfterSignal: { false })
        }
        return true
    }

    // MARK: Records

    /// Reads `user`'s record; nil only when the file does not exist.
    ///
    /// A file that is unreadable, oversized, insecure, not JSON, truncated, of another version or that fails
    /// the structural checks throws: it is never treated as "not enrolled".
    public func load(user: String) throws(StoreError) -> EnrolmentRecord? {
        guard let json = try recordJSON(user: user) else { return nil }
        let path = recordPath(for: user)
        if let record = recent.record(path: path, user: user, bytes: json) { return record }
        let record = try Self.decode(json, path: path, user: user)
        recent.remember(record, path: path, user: user, bytes: json)
        return record
    }

    /// The JSON of `user`'s record as it stands (the whole file in the legacy format, the current copy in the
    /// two-copy one), after the same checks as `load`, not decoded; nil only when the file does not exist. This is
    /// what `tokenpin import` sends and what tests read a record through.
    public func recordJSON(user: String) throws(StoreError) -> Data? {
        let file = try userFile(.record, user: user)
        guard let bytes = try file.read() else { return nil }
        return try Self.currentJSON(Data(bytes), path: file.path)
    }

    /// The record's JSON in a record file's bytes: the whole file in the legacy format, else the intact copy with
    /// the highest sequence number; neither copy intact is `.corrupt`, naming what each half holds.
    public static func currentJSON(_ file: Data, path: String) throws(StoreError) -> Data {
        if file.isEmpty || RecordCopies.isLegacyJSON(file) { return file }
        let reading = RecordCopies.read(file)
        guard let current = reading.current else {
            let halves = reading.damage.map { $0?.rawValue ?? "intact" }
            throw StoreError(
                .corrupt, path: path,
                "neither copy of the record is intact (first half: \(halves.first ?? "?"); second half: "
                    + "\(halves.dropFirst().first ?? "?")); it was edited or damaged, not torn by a crash")
        }
        if reading.copies.count == 2, reading.copies[0].sequence == reading.copies[1].sequence,
            reading.copies[0].json != reading.copies[1].json
        {
            throw StoreError(.corrupt, path: path, "the record's two copies differ under one sequence number (edited?)")
        }
        return current.json
    }

    /// The identities of the cards the records of users other than `user` bind (token or composite slot).
    ///
    /// Reads every record in the directory; one that cannot be read is skipped (it opens nothing either).
    public func boundIdentities(except user: String) -> Set<String> {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var identities = Set<String>()
        for name in names where name.hasSuffix(".json") {
            let owner = String(name.dropLast(5))
            guard owner != user, Self.validate(user: owner), let record = try? load(user: owner) else { continue }
            for kind in [SlotKind.token, .composite] {
                if let serial = record.slot(kind)?.token?.serial { identities.insert(serial) }
            }
        }
        return identities
    }

    /// Writes `record` durably in `writeFormat`; when this returns, the record survives a crash or power loss.
    ///
    /// Legacy JSON: temp file, fsync, rename, fsync of the directory (`AtomicFile.replace`); when it throws, the
    /// old record is intact (or, when only the directory sync failed, the new one is in place but not known to be
    /// durable). Two copies: see `saveCopies`. A symlinked store directory or record is refused.
    public func save(_ record: EnrolmentRecord) throws(StoreError) {
        let file = try userFile(.record, user: record.user)
        // A record that reading would refuse is never written over the one on disk: it would lock its user out.
        do throws(StoreError) {
            try Self.check(record, path: file.path, user: record.user)
        } catch {
            throw StoreError(
                .corrupt, path: file.path,
                "not written, it would not read back (\(error.detail)); the record on disk is unchanged")
        }
        let data = try Self.encode(record)
        switch writeFormat {
        case .json: try file.replace(with: [UInt8](data))
        case .copies: try saveCopies(data, to: file)
        }
        // What the next read of these bytes decodes to, so that it need not: a verification reads the record it
        // (or the one before it) wrote; it passed `decode`'s checks above. Any other bytes on disk, a hand edit
        // included, are decoded as they are.
        let path = recordPath(for: record.user)
        if let stored = record.asStored {
            recent.remember(stored, path: path, user: record.user, bytes: data)
        }
    }

    /// The two-copy save: the new copy, with the next sequence number, over the half that does not hold the
    /// current copy, one `fdatasync`, then the old half blanked (not synced: the next save's sync carries it).
    ///
    /// A missing file, a legacy JSON file (the upgrade) or a copy too large for its half is written whole, as a
    /// new two-copy file, through `AtomicFile.replace`. A file that `UserFile` refuses for a write in place (not a
    /// regular file of the owner, mode 0600, with one link) or that holds no intact copy is left as it is.
    func saveCopies(_ json: Data, to record: UserFile) throws(StoreError) {
        guard let file = try record.open(forUpdate: true) else {
            return try record.replace(with: RecordCopies.newFile(json: json, sequence: 1))
        }
        let bytes = Data(try record.checkedContents(of: file, inPlace: true))
        let path = record.path
        if bytes.isEmpty || RecordCopies.isLegacyJSON(bytes) {
            return try record.replace(with: RecordCopies.newFile(json: json, sequence: 1))
        }
        let reading = RecordCopies.read(bytes)
        guard let current = reading.current else {
            _ = try Self.currentJSON(bytes, path: path)  // names what each half holds
            throw StoreError(.corrupt, path: path, "the record holds no intact copy")
        }
        guard current.sequence < UInt64.max else {
            throw StoreError(.corrupt, path: path, "the record's sequence number is exhausted (edited?)")
        }
        let half = bytes.count / 2
        guard RecordCopies.fits(json, halfSize: half) else {
            return try record.replace(with: RecordCopies.newFile(json: json, sequence: current.sequence + 1))
        }
        let target = 1 - current.half
        let copy = RecordCopies.encode(json: json, sequence: current.sequence + 1, halfSize: half)
        try write(copy, at: target * half, step: .copy, in: file, old: bytes, path: path)
        do {
            try file.dataSync()
        } catch {
            throw storeError(error, path, "cannot sync the record")
        }
        let blank = [UInt8](repeating: 0, count: half)
        try write(blank, at: current.half * half, step: .blank, in: file, old: bytes, path: path)
    }

    private func write(
        _ new: [UInt8], at offset: Int, step: RecordCopies.Step, in file: borrowing FileDescriptor, old: Data,
        path: String
    ) throws(StoreError) {
        var bytes = new
        var crash = false
        if let tornWrite {
            let replaced = [UInt8](old[(old.startIndex + offset)..<(old.startIndex + offset + new.count)])
            if let torn = tornWrite(step, replaced, new) {
                bytes = torn
                crash = true
            }
        }
        do {
            try file.writeAll(bytes, atOffset: offset)
        } catch {
            throw storeError(error, path, "cannot write the record")
        }
        if crash { throw StoreError(.io, path: path, "simulated crash after a torn write (test hook)") }
    }

    /// Deletes `user`'s record (not the lock file, which may be held).
    public func remove(user: String) throws(StoreError) {
        try userFile(.record, user: user).remove()
        // The login password sealed beside it opens with this record only: it goes with it.
        try userFile(.loginKeyring, user: user).remove()
        try syncDirectory()
    }

    private func syncDirectory() throws(StoreError) {
        do {
            try FileDescriptor.open(directory, .readOnly, options: .directory).fsync()
        } catch {
            throw storeError(error, directory, "cannot sync the store directory")
        }
    }

    func storeError(_ error: Errno, _ path: String, _ what: String) -> StoreError {
        StoreError(system: error, path: path, what)
    }
}

// MARK: What UserFile needs of the system beside FileDescriptor: its open flags, `fstat`'s fields

extension UserFile {
    /// The flags a user's file is opened with: never through a symlink (`O_NOFOLLOW`), and never waiting on what is
    /// not a regular file (`O_NONBLOCK`: a FIFO in its place opens at once and is refused by the type check; on a
    /// regular file the flag changes nothing).
    static func openFlags(forUpdate: Bool) -> Int32 {
        let access: FileDescriptor.AccessMode = forUpdate ? .readWrite : .readOnly
        return access.rawValue | FileDescriptor.OpenOptions([.noFollow, .nonBlocking]).rawValue
    }
}

extension UserFile.Status {
    /// What `status` (from `fstat`) says.
    init(_ status: FileStatus) {
        self.init(
            isRegularFile: status.isRegularFile, owner: status.owner, permissions: status.permissions & 0o777,
            size: status.size, links: status.links)
    }
}

/// The format a record store writes.
public enum RecordFormat: String, Sendable, Equatable {
    /// One JSON document, replaced through a temporary file and a rename (two syncs and a directory sync).
    case json
    /// Two checksummed copies of the JSON in one preallocated file, updated in place with one `fdatasync`.
    case copies

    /// `TOKENPIN_RECORD_FORMAT` (`json` or `copies`), else `copies`.
    public static var fromEnvironment: RecordFormat {
        guard let value = CurrentProcess.environmentValue("TOKENPIN_RECORD_FORMAT") else { return .copies }
        return RecordFormat(rawValue: value) ?? .copies
    }
}

extension RecordCopies {
    /// The writes of a two-copy save, in order.
    enum Step: Sendable, Equatable {
        /// The new copy over the half that does not hold the current one (synced after).
        case copy
        /// The half that held the old copy, blanked.
        case blank
    }
}
