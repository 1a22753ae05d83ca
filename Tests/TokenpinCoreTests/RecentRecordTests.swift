import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

/// A record read again with the same bytes is not decoded again; any change of the file is read as it is.
@Suite struct RecentRecordTests {
    func makeRecord(user: String = "alice", remaining: Int = 5) throws -> EnrolmentRecord {
        try makeTestRecord(user: user, remaining: remaining)
    }

    @Test("the same bytes read twice are decoded once")
    func unchangedBytesAreDecodedOnce() throws {
        let directory = temporaryDirectory()
        let record = try makeRecord()
        try RecordStore(directory: directory).save(record)
        let store = RecordStore(directory: directory)  // another store: nothing remembered from the save
        #expect(try store.load(user: "alice") == record)
        #expect(store.recent.reuses == 0)
        #expect(try store.load(user: "alice") == record)
        #expect(store.recent.reuses == 1)
    }

    @Test("a record just saved is read back without a decode, as a fresh decode of its bytes reads it")
    func savedRecordIsReadBackAsDecoded() throws {
        let directory = temporaryDirectory()
        let store = RecordStore(directory: directory)
        var record = try makeRecord()
        // Dates with fractions of a second, which the file rounds down: what is served is what is on disk.
        record.updated = Date(timeIntervalSince1970: 1_800_000_000.75)
        record.counter.consumeAttempt(at: Date(timeIntervalSince1970: 1_800_000_060.5))
        record.otherAttempts = OtherAttempts()
        record.otherAttempts?.consume(
            .init(
                class: .remote, service: "sshd", invokerUID: 0, rhost: "203.0.113.9",
                at: Date(timeIntervalSince1970: 1_800_000_120.25)), maximum: 3)
        record.slots[0].created = Date(timeIntervalSince1970: 1_800_000_000.999)
        try store.save(record)
        let served = try #require(try store.load(user: "alice"))
        #expect(store.recent.reuses == 1)
        let decoded = try #require(try RecordStore(directory: directory).load(user: "alice"))
        #expect(served == decoded)
        #expect(served != record)
        #expect(served.updated == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(served.otherAttempts?.last?.at == Date(timeIntervalSince1970: 1_800_000_120))
    }

    @Test("every record shape, dates with fractions: the stored form is exactly what its bytes decode to")
    func storedFormIsTheDecodedForm() throws {
        for (index, original) in RecordJSONCorpus.records.enumerated() {
            var record = original
            record.created = record.created.addingTimeInterval(0.5)
            record.updated = record.updated.addingTimeInterval(0.25)
            for slot in record.slots.indices { record.slots[slot].created.addTimeInterval(0.125) }
            let bytes = try RecordStore.encode(record)
            let decoded = try RecordStore.decode(bytes, path: "/corpus/\(index)", user: record.user)
            #expect(record.asStored == decoded, "record \(index)")
        }
    }

    @Test("a date the file does not keep exactly is not remembered: the record is decoded when read")
    func unkeptDateIsDecodedAgain() throws {
        var record = try makeRecord()
        record.created = Date(timeIntervalSince1970: -12_219_292_800)  // 1582: Foundation's own ISO 8601
        #expect(record.asStored == nil)
        let store = RecordStore(directory: temporaryDirectory())
        try store.save(record)
        _ = try store.load(user: "alice")
        #expect(store.recent.reuses == 0)
    }

    @Test("a record rewritten, by tokenpin or by hand, is decoded from the new bytes")
    func changedBytesAreDecodedAgain() throws {
        let store = RecordStore(directory: temporaryDirectory())
        try store.save(try makeRecord(remaining: 5))
        _ = try store.load(user: "alice")
        let changed = try makeRecord(remaining: 4)
        try store.save(changed)
        #expect(try store.load(user: "alice") == changed)
        #expect(store.recent.reuses == 2)  // each read right after a save: remembered by the save
        // The same length, one byte different, written by hand (in the file's format): still read as it is now.
        let path = store.recordPath(for: "alice")
        let text = try #require(RecordFiles.json(atPath: path).flatMap { String(data: $0, encoding: .utf8) })
        let edited = Data(text.replacingOccurrences(of: "\"remaining\" : 4", with: "\"remaining\" : 3").utf8)
        try RecordFiles.write(json: edited, toPath: path, format: store.writeFormat)
        #expect(try store.load(user: "alice")?.counter.remaining == 3)
        #expect(store.recent.reuses == 2)
    }

    @Test("a damaged record is refused every time, never served from what was read before")
    func damagedRecordIsRefused() throws {
        let store = RecordStore(directory: temporaryDirectory())
        try store.save(try makeRecord())
        _ = try store.load(user: "alice")
        let path = store.recordPath(for: "alice")
        try Data("{\"version\": 1".utf8).write(to: URL(fileURLWithPath: path))
        for _ in 0..<2 {
            #expect {
                _ = try store.load(user: "alice")
            } throws: { ($0 as? StoreError)?.code == .corrupt }
        }
    }

    @Test("what one user's record decoded to is never returned for another user")
    func otherUsersAreNotServed() throws {
        let store = RecordStore(directory: temporaryDirectory())
        try store.save(try makeRecord(user: "alice"))
        _ = try store.load(user: "alice")
        // bob's file holds alice's bytes (copied by hand): refused as alice's record, not served from memory.
        let alice = try #require(FileManager.default.contents(atPath: store.recordPath(for: "alice")))
        _ = FileManager.default.createFile(
            atPath: store.recordPath(for: "bob"), contents: alice, attributes: [.posixPermissions: 0o600])
        #expect {
            _ = try store.load(user: "bob")
        } throws: { ($0 as? StoreError)?.code == .corrupt }
        #expect(store.recent.reuses == 1)  // alice's own read after her save, not bob's
    }
}
