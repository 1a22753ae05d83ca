import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

#if canImport(Glibc)
    import Glibc
#endif

/// The two-copy record file: updated in place with one sync, crash-safe at every byte, legacy files upgraded once.
@Suite struct StoreCopiesTests {
    func store() throws -> RecordStore {
        var store = RecordStore(directory: temporaryDirectory() + "/store")
        store.writeFormat = .copies
        try store.prepare()
        return store
    }

    /// Two states of one record: the second has one attempt counted and a later update time.
    func states(user: String = "alice") throws -> (EnrolmentRecord, EnrolmentRecord) {
        let first = try makeTestRecord(user: user)
        var second = first
        second.counter.consumeAttempt(at: Date(timeIntervalSince1970: 1_800_000_100))
        second.updated = Date(timeIntervalSince1970: 1_800_000_100)
        return (first, second)
    }

    func bytes(_ path: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path) ?? Data()) }

    func inode(_ path: String) -> ino_t {
        var info = stat()
        stat(path, &info)
        return info.st_ino
    }

    /// Puts `contents` back into the file in place (same inode), as a reboot would find them.
    func restore(_ path: String, _ contents: [UInt8]) {
        let fd = open(path, O_WRONLY | O_TRUNC)
        defer { close(fd) }
        _ = contents.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    func contains(_ haystack: [UInt8], _ needle: Data) -> Bool {
        let needle = [UInt8](needle)
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }

    @Test func savesInPlaceWithOneFileAndPrivateMode() throws {
        let store = try store()
        let (first, second) = try states()
        try store.save(first)
        let path = store.recordPath(for: "alice")
        let node = inode(path)
        #expect(Array(bytes(path).prefix(4)) == Array("TPRC".utf8))
        #expect(bytes(path).count % 8192 == 0)
        #expect(try store.load(user: "alice") == first)
        try store.save(second)
        #expect(try store.load(user: "alice") == second)
        try store.save(first)
        #expect(try store.load(user: "alice") == first)
        #expect(inode(path) == node, "updated in place, not renamed")
        var info = stat()
        stat(path, &info)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(!FileManager.default.fileExists(atPath: store.temporaryPath(for: "alice")))
    }

    /// After a save only the new copy is in the file: the other half is blank, so the state before (a retired
    /// token seal, a counter before the attempt) is not left at rest for anyone to fall back to.
    @Test func theOldCopyIsBlankedAfterTheNewOneIsDurable() throws {
        let store = try store()
        let (first, second) = try states()
        try store.save(first)
        try store.save(second)
        let path = store.recordPath(for: "alice")
        let file = bytes(path)
        #expect(!contains(file, try RecordStore.encode(first)))
        #expect(contains(file, try RecordStore.encode(second)))
        let reading = RecordCopies.read(Data(file))
        #expect(reading.copies.count == 1 && reading.copies[0].sequence == 2)
        #expect(reading.damage.contains(.blank))
    }

    /// A crash at any byte of either write finds the state before or the state after, never a mix; a tear of
    /// the new copy always finds the state before (the current copy's half is never written).
    @Test(arguments: [RecordCopies.Step.copy, .blank])
    func aTearAtEveryOffsetFindsTheOldOrTheNewState(step: RecordCopies.Step) throws {
        var store = try store()
        let (first, second) = try states()
        try store.save(first)
        try store.save(second)  // the first half blank, the second current: the next copy goes to the first
        let path = store.recordPath(for: "alice")
        let before = bytes(path)
        let newCopyLength = try RecordCopies.encode(
            json: RecordStore.encode(first), sequence: 3, halfSize: before.count / 2
        ).count
        let length = step == .copy ? newCopyLength : before.count / 2
        // Every byte of the new copy; the blanking's bytes are all alike, so every 16th of them and the last.
        let offsets = step == .copy ? Array(0...length) : Array(stride(from: 0, to: length, by: 16)) + [length]
        for offset in offsets {
            restore(path, before)
            store.tornWrite = { current, old, new in
                current == step ? Array(new.prefix(offset)) + old.dropFirst(offset) : nil
            }
            #expect(throws: StoreError.self) { try store.save(first) }
            store.tornWrite = nil
            let found = try store.load(user: "alice")
            if step == .copy && offset < newCopyLength {
                #expect(found == second, "torn at byte \(offset) of the new copy")
            } else {
                #expect(found == first, "torn at byte \(offset) of the blanking")
            }
        }
    }

    /// The disk may keep any subset of a write's sectors, not only a prefix.
    @Test func aTearOfAnySectorsFindsTheOldOrTheNewState() throws {
        var store = try store()
        let (first, second) = try states()
        try store.save(first)
        try store.save(second)
        let path = store.recordPath(for: "alice")
        let before = bytes(path)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            restore(path, before)
            let mask = UInt64.random(in: 0...UInt64.max, using: &generator)
            store.tornWrite = { step, old, new in
                guard step == .copy else { return nil }
                return (0..<new.count).map { mask >> UInt64(($0 / 64) % 64) & 1 == 1 ? new[$0] : old[$0] }
            }
            #expect(throws: StoreError.self) { try store.save(first) }
            store.tornWrite = nil
            let found = try store.load(user: "alice")
            #expect(found == first || found == second)
        }
    }

    @Test func bothCopiesDamagedIsCorruptNamingTheFileAndLeftAlone() throws {
        let store = try store()
        let (first, second) = try states()
        try store.save(first)
        try store.save(second)
        let path = store.recordPath(for: "alice")
        var damaged = bytes(path)
        damaged[damaged.count / 2 + 40] ^= 0x01  // the current copy's JSON: its checksum fails, the other is blank
        restore(path, damaged)
        #expect {
            _ = try store.load(user: "alice")
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .corrupt && error.path == path && error.detail.contains("neither copy")
                && error.detail.contains("checksum") && error.detail.contains("blank")
        }
        // A save does not paper over it: the damaged file stays for the admin to look at.
        #expect { try store.save(first) } throws: { ($0 as? StoreError)?.code == .corrupt }
        #expect(bytes(path) == damaged)
    }

    @Test func twoCopiesUnderOneSequenceNumberAreCorrupt() throws {
        let store = try store()
        let (first, second) = try states()
        try store.save(first)
        let path = store.recordPath(for: "alice")
        let half = bytes(path).count / 2
        var file = RecordCopies.encode(json: try RecordStore.encode(first), sequence: 7, halfSize: half)
        file += [UInt8](repeating: 0, count: half - file.count)
        let other = RecordCopies.encode(json: try RecordStore.encode(second), sequence: 7, halfSize: half)
        file += other + [UInt8](repeating: 0, count: half - other.count)
        restore(path, file)
        #expect { _ = try store.load(user: "alice") } throws: {
            ($0 as? StoreError)?.code == .corrupt && ($0 as? StoreError)?.detail.contains("one sequence number") == true
        }
    }

    /// The rollback an attacker with write access to the file can and cannot do (docs/security.md).
    @Test func rollingBackACopy() throws {
        let store = try store()
        let (first, second) = try states()
        try store.save(first)
        let path = store.recordPath(for: "alice")
        let kept = bytes(path)  // a copy of the file taken at the first state
        try store.save(second)
        // Nothing in the file itself brings the first state back: the older half is blank, and damaging the
        // current copy is refused, not a fall-back.
        var edited = bytes(path)
        edited[edited.count / 2 + 30] ^= 0x80
        restore(path, edited)
        #expect(throws: StoreError.self) { _ = try store.load(user: "alice") }
        // An older copy with a higher sequence number written over it checks out (the checksum is not a MAC):
        // write access to the file is the whole record, as it was with the JSON file. Only the daemon's
        // root-owned store, or a card's own counter, keeps the count from its user.
        let forged = RecordCopies.newFile(json: try RecordStore.encode(first), sequence: 99)
        restore(path, forged)
        #expect(try store.load(user: "alice") == first)
        // The kept file restores as it would have before; the next save goes on from its sequence number.
        restore(path, kept)
        #expect(try store.load(user: "alice") == first)
    }

    @Test func aLegacyJSONRecordIsReadAndUpgradedOnce() throws {
        var store = try store()
        let (first, second) = try states()
        store.writeFormat = .json
        try store.save(first)
        let path = store.recordPath(for: "alice")
        #expect(bytes(path).first == UInt8(ascii: "{"))
        store.writeFormat = .copies
        #expect(try store.load(user: "alice") == first)
        let legacyNode = inode(path)
        try store.save(second)  // the upgrade: a whole new file, through the atomic replace
        #expect(Array(bytes(path).prefix(4)) == Array("TPRC".utf8))
        #expect(inode(path) != legacyNode)
        #expect(try store.load(user: "alice") == second)
        let node = inode(path)
        try store.save(first)
        try store.save(second)
        #expect(inode(path) == node, "upgraded once; in place after")
        // And back: a store writing JSON replaces a two-copy file with JSON.
        store.writeFormat = .json
        try store.save(first)
        #expect(bytes(path).first == UInt8(ascii: "{"))
        #expect(try store.load(user: "alice") == first)
    }

    /// What `tokenpin import` sends and the tests read: the current copy's JSON, or a legacy file as it is.
    @Test func theRecordsJSONIsTheCurrentCopy() throws {
        var store = try store()
        let (first, second) = try states()
        try store.save(first)
        try store.save(second)
        let json = try #require(try store.recordJSON(user: "alice"))
        #expect(json == (try RecordStore.encode(second)))
        #expect(RecordFiles.json(atPath: store.recordPath(for: "alice")) == json)
        #expect(try store.recordJSON(user: "bob") == nil)
        store.writeFormat = .json
        try store.save(first)
        #expect(try store.recordJSON(user: "alice") == (try RecordStore.encode(first)))
        // A copy the tests write by hand reads back the same way.
        try RecordFiles.write(json: json, toPath: store.recordPath(for: "alice"), format: .copies)
        #expect(try store.load(user: "alice") == second)
    }

    @Test func aRecordThatOutgrowsItsHalfIsWrittenWhole() throws {
        let store = try store()
        let (first, _) = try states()
        try store.save(first)
        let path = store.recordPath(for: "alice")
        let size = bytes(path).count
        var big = first
        for index in 0..<40 {
            var slot = first.slots[0]
            slot.created = Date(timeIntervalSince1970: Double(index))
            big.slots.append(slot)
        }
        let json = try RecordStore.encode(big)
        #expect(!RecordCopies.fits(json, halfSize: size / 2))
        try store.saveCopies(json, to: store.userFile(.record, user: "alice"))
        #expect(bytes(path).count > size)
        #expect(try RecordStore.currentJSON(Data(bytes(path)), path: path) == json)
        #expect(RecordCopies.read(Data(bytes(path))).current?.sequence == 2)
    }

    @Test func insecureFilesAreRefusedBeforeAnyWrite() throws {
        let store = try store()
        let (first, second) = try states()
        try store.save(first)
        let path = store.recordPath(for: "alice")
        let saved = bytes(path)
        chmod(path, 0o644)
        #expect { try store.save(second) } throws: { ($0 as? StoreError)?.code == .insecure }
        chmod(path, 0o600)
        #expect(link(path, store.directory + "/other") == 0)
        #expect { try store.save(second) } throws: {
            ($0 as? StoreError)?.code == .insecure && ($0 as? StoreError)?.detail.contains("hard links") == true
        }
        unlink(store.directory + "/other")
        #expect(rename(path, store.directory + "/elsewhere") == 0)
        #expect(symlink(store.directory + "/elsewhere", path) == 0)
        #expect { try store.save(second) } throws: { ($0 as? StoreError)?.code == .insecure }
        #expect(bytes(store.directory + "/elsewhere") == saved)
        var foreign = RecordStore(directory: store.directory, owner: 4242)
        foreign.writeFormat = .copies
        unlink(path)
        #expect(rename(store.directory + "/elsewhere", path) == 0)
        #expect { try foreign.save(second) } throws: { ($0 as? StoreError)?.code == .insecure }
        #expect(bytes(path) == saved)
    }

    @Test(arguments: [0, 1, 47, 8191, 8193])
    func filesOfTheWrongShapeAreCorrupt(size: Int) throws {
        let store = try store()
        let path = store.recordPath(for: "alice")
        _ = FileManager.default.createFile(
            atPath: path, contents: Data([UInt8](repeating: 0x54, count: size)),
            attributes: [.posixPermissions: 0o600])
        #expect { _ = try store.load(user: "alice") } throws: { ($0 as? StoreError)?.code == .corrupt }
    }
}
