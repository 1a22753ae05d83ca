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
        let store = RecordStore(directory: temporaryDirectory())
        let record = try makeRecord()
        try store.save(record)
        #expect(try store.load(user: "alice") == record)
        #expect(store.recent.reuses == 0)
        #expect(try store.load(user: "alice") == record)
        #expect(store.recent.reuses == 1)
    }

    @Test("a record rewritten, by tokenpin or by hand, is decoded from the new bytes")
    func changedBytesAreDecodedAgain() throws {
        let store = RecordStore(directory: temporaryDirectory())
        try store.save(try makeRecord(remaining: 5))
        _ = try store.load(user: "alice")
        let changed = try makeRecord(remaining: 4)
        try store.save(changed)
        #expect(try store.load(user: "alice") == changed)
        #expect(store.recent.reuses == 0)
        // The same length, one byte different, written by hand (in the file's format): still read as it is now.
        let path = store.recordPath(for: "alice")
        let text = try #require(RecordFiles.json(atPath: path).flatMap { String(data: $0, encoding: .utf8) })
        let edited = Data(text.replacingOccurrences(of: "\"remaining\" : 4", with: "\"remaining\" : 3").utf8)
        try RecordFiles.write(json: edited, toPath: path, format: store.writeFormat)
        #expect(try store.load(user: "alice")?.counter.remaining == 3)
        #expect(store.recent.reuses == 0)
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
        #expect(store.recent.reuses == 0)
    }
}
