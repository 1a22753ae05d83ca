import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct StoreTests {
    func makeRecord(user: String = "alice") throws -> EnrolmentRecord { try makeTestRecord(user: user) }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        stat(path, &info)
        return info.st_mode & 0o777
    }

    @Test func savesAndLoadsWithPrivateModes() throws {
        let store = RecordStore(directory: temporaryDirectory() + "/store")
        try store.prepare()
        #expect(mode(store.directory) == 0o700)
        let record = try makeRecord()
        try store.save(record)
        #expect(mode(store.recordPath(for: "alice")) == 0o600)
        #expect(try store.load(user: "alice") == record)
        #expect(try store.load(user: "bob") == nil)
        #expect(!FileManager.default.fileExists(atPath: store.temporaryPath(for: "alice")))
    }

    @Test func recordFormatHasTheDocumentedShape() throws {
        let store = RecordStore(directory: temporaryDirectory())
        try store.save(try makeRecord())
        let object = try #require(RecordFiles.object(atPath: store.recordPath(for: "alice")))
        #expect(object["version"] as? Int == 1)
        #expect(object["user"] as? String == "alice")
        let counter = try #require(object["counter"] as? [String: Any])
        #expect(counter["remaining"] as? Int == 5 && counter["max"] as? Int == 5)
        let slots = try #require(object["slots"] as? [[String: Any]])
        #expect(slots.map { $0["kind"] as? String } == ["pin", "recovery"])
        #expect((slots[0]["wrappedKey"] as? String).flatMap { Data(base64Encoded: $0) }?.count == 48)
    }

    /// The legacy format's atomic replace (the two-copy format uses it to create and upgrade a file).
    @Test func leftoverTemporaryFileIsIgnoredAndReplaced() throws {
        var store = RecordStore(directory: temporaryDirectory())
        store.writeFormat = .json
        let record = try makeRecord()
        try store.save(record)
        // A crash between writing the temp file and the rename leaves garbage behind.
        _ = FileManager.default.createFile(
            atPath: store.temporaryPath(for: "alice"), contents: Data("{garbage".utf8),
            attributes: [.posixPermissions: 0o600])
        #expect(try store.load(user: "alice") == record)
        var changed = record
        changed.counter.consumeAttempt(at: Date(timeIntervalSince1970: 1_800_000_100))
        try store.save(changed)
        #expect(try store.load(user: "alice") == changed)
        #expect(!FileManager.default.fileExists(atPath: store.temporaryPath(for: "alice")))
    }

    @Test func everyTruncationIsRefusedNamingTheFile() throws {
        let store = RecordStore(directory: temporaryDirectory())
        try store.save(try makeRecord())
        let path = store.recordPath(for: "alice")
        let full = try #require(FileManager.default.contents(atPath: path))
        for length in stride(from: 0, to: full.count - 2, by: 7) {
            try full.prefix(length).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            #expect {
                _ = try store.load(user: "alice")
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.code == .corrupt && error.path == path
            }
        }
        // Nothing was overwritten: the truncated bytes are still there.
        #expect(FileManager.default.contents(atPath: path)?.count ?? 0 < full.count)
    }

    @Test(arguments: [
        ("{\"version\": 2}", StoreError.Code.unknownVersion),
        ("{\"version\": \"1\"}", .corrupt),
        ("[]", .corrupt),
        ("not json", .corrupt),
        ("{\"version\": 1, \"user\": \"alice\"}", .corrupt),
    ])
    func foreignContentIsRefused(content: String, code: StoreError.Code) throws {
        let store = RecordStore(directory: temporaryDirectory())
        _ = FileManager.default.createFile(
            atPath: store.recordPath(for: "alice"), contents: Data(content.utf8),
            attributes: [.posixPermissions: 0o600])
        #expect {
            _ = try store.load(user: "alice")
        } throws: { ($0 as? StoreError)?.code == code }
    }

    @Test func structuralChecks() throws {
        var record = try makeRecord()
        record.counter.remaining = 9
        #expect(record.structuralProblem != nil)
        record = try makeRecord()
        record.slots.removeAll { $0.kind == .recovery }
        #expect(record.structuralProblem != nil)
        record = try makeRecord()
        record.slots.append(record.slots[0])
        #expect(record.structuralProblem != nil)
        let data = try RecordStore.encode(try makeRecord(user: "alice"))
        #expect {
            try RecordStore.decode(data, path: "x", user: "bob")
        } throws: { ($0 as? StoreError) == StoreError(.corrupt, path: "x", "the record belongs to alice, not bob") }
    }

    @Test func storesOthersCanWriteAreRefused() throws {
        let directory = temporaryDirectory()
        let store = RecordStore(directory: directory)
        try store.save(try makeRecord())
        chmod(directory, 0o777)
        #expect { try store.prepare() } throws: { ($0 as? StoreError)?.code == .insecure }
        chmod(directory, 0o700)
        chmod(store.recordPath(for: "alice"), 0o666)
        #expect { _ = try store.load(user: "alice") } throws: { ($0 as? StoreError)?.code == .insecure }
    }

    /// A record others can only read is refused too: it holds what an offline guess starts from.
    @Test(arguments: [0o644, 0o640, 0o604, 0o600])
    func recordsOthersCanReadAreRefused(mode: Int) throws {
        let directory = temporaryDirectory()
        let store = RecordStore(directory: directory)
        try store.save(try makeRecord())
        chmod(store.recordPath(for: "alice"), mode_t(mode))
        if mode == 0o600 {
            #expect(try store.load(user: "alice") != nil)
            return
        }
        do {
            _ = try store.load(user: "alice")
            Issue.record("a \(String(mode, radix: 8)) record was read")
        } catch {
            #expect(error.code == .insecure)
            #expect(error.detail.contains("others can read"))
        }
    }

    @Test func symlinkedRecordsAndForeignOwnersAreRefused() throws {
        let directory = temporaryDirectory()
        let store = RecordStore(directory: directory)
        try store.save(try makeRecord())
        try FileManager.default.moveItem(atPath: store.recordPath(for: "alice"), toPath: directory + "/elsewhere.json")
        try FileManager.default.createSymbolicLink(
            atPath: store.recordPath(for: "alice"), withDestinationPath: directory + "/elsewhere.json")
        #expect { _ = try store.load(user: "alice") } throws: { ($0 as? StoreError)?.code == .insecure }
        let foreign = RecordStore(directory: directory, owner: 4242)
        #expect { try foreign.prepare() } throws: { ($0 as? StoreError)?.code == .insecure }
    }

    @Test(arguments: ["alice", "a.b-c_d", "u1000"]) func validUsers(user: String) {
        #expect(RecordStore.validate(user: user))
    }

    @Test(arguments: ["", "../etc", "a/b", ".hidden", "-x", String(repeating: "a", count: 65), "al ice"])
    func invalidUsers(user: String) throws {
        #expect(!RecordStore.validate(user: user))
        let store = RecordStore(directory: temporaryDirectory())
        #expect { _ = try store.load(user: user) } throws: { ($0 as? StoreError)?.code == .invalidUser }
    }

    @Test func lockIsExclusiveAcrossDescriptors() throws {
        let store = RecordStore(directory: temporaryDirectory())
        try store.withLock(user: "alice") {
            let fd = open(store.lockPath(for: "alice"), O_RDWR)
            defer { close(fd) }
            #expect(flock(fd, LOCK_EX | LOCK_NB) != 0, "a second holder must wait")
        }
        let fd = open(store.lockPath(for: "alice"), O_RDWR)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0, "released after the body")
    }
}
