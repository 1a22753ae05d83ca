import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

#if canImport(Glibc)
    import Glibc
#endif

/// A user's two files in the store, the record and the login-keyring file, as the refusal tests reach them: through
/// the store's own readers and writers.
enum UserFileCase: String, CaseIterable, Sendable {
    case record
    case loginKeyring

    func path(_ store: RecordStore) -> String {
        switch self {
        case .record: store.recordPath(for: "alice")
        case .loginKeyring: store.loginKeyringPath(for: "alice")
        }
    }

    /// The name its messages give it.
    var name: String { self == .record ? "the record" : "the login-keyring file" }

    /// The largest file of this kind the store reads.
    var maximumSize: Int { self == .record ? RecordStore.maximumRecordSize : LoginKeyringFile.maximumLength }

    /// Writes a good file through the store.
    func save(_ store: RecordStore) throws {
        switch self {
        case .record: try store.save(try makeTestRecord())
        case .loginKeyring:
            let file = LoginKeyringFile(
                publicKey: [UInt8](repeating: 9, count: 32), sealedPassword: [UInt8](repeating: 1, count: 60))
            try store.saveLoginKeyring(file, user: "alice")
        }
    }

    /// Reads the file through the store; the error it throws, or nil when it read it.
    func loadError(_ store: RecordStore) -> StoreError? {
        do {
            switch self {
            case .record: _ = try store.load(user: "alice")
            case .loginKeyring: _ = try store.loadLoginKeyring(user: "alice")
            }
            return nil
        } catch {
            return error
        }
    }

    /// Saves over the file through the store; the error it throws, or nil when it saved.
    func saveError(_ store: RecordStore) -> StoreError? {
        do {
            try save(store)
            return nil
        } catch {
            return error as? StoreError
        }
    }
}

/// What is wrong with a user's file, made by hand in the store directory.
enum UserFileFault: String, CaseIterable, Sendable {
    case symlink
    case directory
    /// A FIFO in the file's place: refused as not a regular file, never waited on (the open does not block).
    case fifo
    case otherOwner
    case groupWritable
    case worldWritable
    case groupReadable
    case worldReadable
    case tooLarge
    case truncated
}

/// Every refusal either store makes for a user's file, made for both: the record and the login-keyring file are
/// opened and checked by the same rules, so each fault is refused for each with the same code and message it has
/// always had.
@Suite struct UserFileRefusalTests {
    func store(_ format: RecordFormat = .copies, owner: uid_t = geteuid()) throws -> RecordStore {
        var store = RecordStore(directory: temporaryDirectory("userfile") + "/store", owner: owner)
        store.writeFormat = format
        try store.prepare()
        return store
    }

    /// Puts `fault` into `file` (saved good first), returning the store to read it with.
    func make(_ fault: UserFileFault, in file: UserFileCase, format: RecordFormat = .copies) throws -> RecordStore {
        var store = try store(format)
        try file.save(store)
        let path = file.path(store)
        switch fault {
        case .symlink:
            try FileManager.default.moveItem(atPath: path, toPath: store.directory + "/elsewhere")
            try FileManager.default.createSymbolicLink(
                atPath: path, withDestinationPath: store.directory + "/elsewhere")
        case .directory:
            try FileManager.default.removeItem(atPath: path)
            #expect(mkdir(path, 0o700) == 0)
        case .fifo:
            try FileManager.default.removeItem(atPath: path)
            #expect(mkfifo(path, 0o600) == 0)
        case .otherOwner:
            store = RecordStore(directory: store.directory, owner: geteuid() &+ 4242)
            store.writeFormat = format
        case .groupWritable: #expect(chmod(path, 0o620) == 0)
        case .worldWritable: #expect(chmod(path, 0o602) == 0)
        case .groupReadable: #expect(chmod(path, 0o640) == 0)
        case .worldReadable: #expect(chmod(path, 0o604) == 0)
        case .tooLarge: rewrite(path, [UInt8](repeating: 0x41, count: file.maximumSize + 1))
        case .truncated:
            let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data())
            rewrite(path, Array(bytes.prefix(bytes.count / 2)))
        }
        return store
    }

    /// Writes `bytes` over the file in place, keeping its mode.
    func rewrite(_ path: String, _ bytes: [UInt8]) {
        let fd = open(path, O_WRONLY | O_TRUNC)
        defer { close(fd) }
        #expect(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count)
    }

    /// The error a read of `file` with `fault` throws, as the store has always said it.
    func expected(_ fault: UserFileFault, _ file: UserFileCase, _ store: RecordStore) throws -> StoreError {
        let path = file.path(store)
        let name = file.name
        func others(_ mode: Int) -> StoreError {
            let octal = String(mode, radix: 8)
            guard file == .record else {
                return StoreError(.insecure, path: path, "others can read or write \(name) (mode \(octal))")
            }
            let verb = mode & 0o022 != 0 ? "write" : "read"
            return StoreError(.insecure, path: path, "others can \(verb) \(name) (mode \(octal); a record is 0600)")
        }
        switch fault {
        case .symlink:
            return StoreError(
                .insecure, path: path, file == .record ? "the record is a symlink" : "the file is a symlink")
        case .directory, .fifo: return StoreError(.insecure, path: path, "\(name) is not a regular file")
        case .otherOwner:
            return StoreError(.insecure, path: path, "\(name) belongs to uid \(geteuid()), not \(store.owner)")
        case .groupWritable: return others(0o620)
        case .worldWritable: return others(0o602)
        case .groupReadable: return others(0o640)
        case .worldReadable: return others(0o604)
        case .tooLarge:
            let detail =
                file == .record
                ? "the record is \(file.maximumSize + 1) bytes, too large to be a tokenpin record"
                : "the login-keyring file is too large to be one"
            return StoreError(.corrupt, path: path, detail)
        case .truncated:
            let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data())
            guard file == .record else {
                var detail = "?"
                do { _ = try LoginKeyringFile.parse(bytes) } catch { detail = error.detail }
                return StoreError(.corrupt, path: path, "the login-keyring file is damaged: \(detail)")
            }
            return StoreError(
                .corrupt, path: path,
                "neither copy of the record is intact (first half: a malformed header; second half: blank); it was "
                    + "edited or damaged, not torn by a crash")
        }
    }

    @Test(arguments: UserFileFault.allCases, UserFileCase.allCases)
    func eachFaultIsRefusedOnReadingWithItsMessage(fault: UserFileFault, file: UserFileCase) throws {
        let store = try make(fault, in: file)
        #expect(file.loadError(store) == (try expected(fault, file, store)))
    }

    /// The record's legacy JSON format is read by the same checks; only the truncation reads differently.
    @Test(arguments: UserFileFault.allCases)
    func aLegacyRecordIsRefusedTheSameWay(fault: UserFileFault) throws {
        let store = try make(fault, in: .record, format: .json)
        let path = store.recordPath(for: "alice")
        let want =
            fault == .truncated
            ? StoreError(.corrupt, path: path, "the record is not valid JSON or has no version (truncated or edited?)")
            : try expected(fault, .record, store)
        #expect(UserFileCase.record.loadError(store) == want)
    }

    /// A save never writes through a symlink, and a file saved is 0600, for both files and both record formats.
    @Test(arguments: UserFileCase.allCases, [RecordFormat.copies, .json])
    func savesRefuseASymlinkAndWrite0600(file: UserFileCase, format: RecordFormat) throws {
        let store = try make(.symlink, in: file, format: format)
        let path = file.path(store)
        let inPlace = file == .record && format == .copies
        let want =
            inPlace
            ? StoreError(.insecure, path: path, "the record is a symlink")
            : StoreError(.insecure, path: path, "cannot save \(file.name): a symlink is in the way")
        #expect(file.saveError(store) == want)
        let clean = try self.store(format)
        try file.save(clean)
        var info = stat()
        #expect(lstat(file.path(clean), &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFREG && info.st_mode & 0o777 == 0o600)
    }

    /// The two-copy save writes in place, so it makes the reader's checks first, and refuses a file with other
    /// hard links (a write in place would change them too).
    @Test(arguments: [
        UserFileFault.otherOwner, .groupWritable, .worldWritable, .groupReadable, .worldReadable, .tooLarge,
    ])
    func theInPlaceSaveChecksTheFileFirst(fault: UserFileFault) throws {
        let store = try make(fault, in: .record)
        let before = FileManager.default.contents(atPath: store.recordPath(for: "alice"))
        #expect(UserFileCase.record.saveError(store) == (try expected(fault, .record, store)))
        #expect(FileManager.default.contents(atPath: store.recordPath(for: "alice")) == before, "left as it was")
    }

    @Test func theInPlaceSaveRefusesHardLinks() throws {
        let store = try store()
        try UserFileCase.record.save(store)
        let path = store.recordPath(for: "alice")
        #expect(link(path, store.directory + "/other") == 0)
        #expect(
            UserFileCase.record.saveError(store)
                == StoreError(.insecure, path: path, "the record has other hard links; it is written in place"))
    }
}
