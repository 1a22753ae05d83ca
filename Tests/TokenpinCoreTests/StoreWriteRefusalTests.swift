import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

/// A record that reading would refuse is never written: the record on disk stays as it was, readable, and nothing
/// is remembered in its place.
@Suite struct StoreWriteRefusalTests {
    /// Records `decode` refuses, each with a part of the reason it gives.
    static func unreadable(from record: EnrolmentRecord) -> [(EnrolmentRecord, String)] {
        var noRecovery = record
        noRecovery.slots.removeAll { $0.kind == .recovery }
        var counter = record
        counter.counter.remaining = counter.counter.max + 1
        var longURI = RecordJSONCorpus.tokenRecord(RecordJSONCorpus.bindings[6])
        longURI.user = record.user
        let tokenIndex = longURI.slots.firstIndex { $0.token != nil }!
        longURI.slots[tokenIndex].token?.uri = "pkcs11:" + String(repeating: "x", count: 1100)
        var version = record
        version.version = EnrolmentRecord.currentVersion + 1
        return [
            (noRecovery, "no recovery slot"), (counter, "remaining"), (longURI, "token.uri"),
            (version, "version"),
        ]
    }

    @Test(
        "refused before any write, in either format; the record on disk still reads",
        arguments: [
            RecordFormat.json, .copies,
        ])
    func unreadableRecordIsNotWritten(format: RecordFormat) throws {
        let directory = temporaryDirectory()
        var store = RecordStore(directory: directory)
        store.writeFormat = format
        let good = try makeTestRecord()
        try store.save(good)
        let path = store.recordPath(for: "alice")
        let before = try #require(FileManager.default.contents(atPath: path))
        #expect(RecordJSONCorpus.bindings[6].application == "pkcs11")
        for (bad, reason) in Self.unreadable(from: good) {
            let error = #expect(throws: StoreError.self) { try store.save(bad) }
            #expect(error?.code == .corrupt, "\(reason)")
            #expect(error?.detail.contains("not written") == true, "\(reason)")
            #expect(error?.detail.contains(reason) == true, "\(error?.detail ?? "") should name \(reason)")
            #expect(FileManager.default.contents(atPath: path) == before, "\(reason)")
            #expect(try store.load(user: "alice") == good, "\(reason)")
            #expect(try RecordStore(directory: directory).load(user: "alice") == good, "\(reason)")
        }
    }
}
