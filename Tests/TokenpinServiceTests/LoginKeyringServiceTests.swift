import Foundation
import Testing
import TokenpinCore
import TokenpinTestSupport

@testable import TokenpinService

func keyringService(on: Bool = true, store: RecordStore? = nil) -> PINService {
    var service = makeService()
    service.configuration.loginKeyring = on
    guard let store else { return service }
    return PINService(store: store, configuration: service.configuration, user: "alice")
}

func password(_ text: String) -> SecretBytes {
    var bytes = Array(text.utf8)
    return SecretBytes(consuming: &bytes)
}

/// The password a verification released, or nil.
func releasedPassword(_ service: PINService, _ pin: String, release: Bool = true) throws -> String? {
    var result = try service.verifyOpeningLoginKeyring(ScriptedInteraction([pin]), method: nil, release: release)
    guard let secret = result.password.take() else { return nil }
    return secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
}

/// `login-keyring = on` in the service: the public key at enrolment and at a verification, sealing without a
/// verification, opening after one, and what survives `change` and what a new record drops.
@Suite struct LoginKeyringServiceTests {
    @Test func enrolStoresThePublicKeyAndASealedPasswordOpensAfterTheRightPIN() throws {
        let service = keyringService()
        _ = try enrol(service)
        let file = try #require(try service.store.loadLoginKeyring(user: "alice"))
        #expect(file.sealedPassword == nil)
        try service.sealLoginPassword(password("hunter2 login"))
        #expect(try releasedPassword(service, "482916") == "hunter2 login")
        #expect(try releasedPassword(service, "482916", release: false) == nil)
        #expect(try releasedPassword(service, "000000") == nil)  // a wrong PIN opens nothing
        #expect(try service.store.load(user: "alice")?.counter.remaining == 4)
    }

    @Test func theSealedPasswordSurvivesAPINChange() throws {
        let service = keyringService()
        _ = try enrol(service)
        try service.sealLoginPassword(password("pw-before"))
        _ = try service.change(ScriptedInteraction(["482916", "739154", "739154"]))
        #expect(try releasedPassword(service, "739154") == "pw-before")
    }

    @Test func aRecordMadeBeforeGetsItsKeyAtTheNextVerification() throws {
        let before = keyringService(on: false)
        _ = try enrol(before)
        #expect(try before.store.loadLoginKeyring(user: "alice") == nil)
        let service = keyringService(store: before.store)
        #expect {
            try service.sealLoginPassword(password("pw"))
        } throws: { ($0 as? ServiceError)?.code == "configuration" }
        #expect(try releasedPassword(service, "482916") == nil)  // nothing sealed yet; the key is stored now
        #expect(try service.store.loadLoginKeyring(user: "alice") != nil)
        try service.sealLoginPassword(password("pw"))
        #expect(try releasedPassword(service, "482916") == "pw")
    }

    @Test func aNewRecordDropsTheOldSealedPassword() throws {
        let service = keyringService()
        _ = try enrol(service)
        try service.sealLoginPassword(password("old"))
        let old = try #require(try service.store.loadLoginKeyring(user: "alice"))
        _ = try service.unenrol(ScriptedInteraction(["482916"]), method: nil, administrator: false)
        #expect(try service.store.loadLoginKeyring(user: "alice") == nil)
        _ = try enrol(service)
        let new = try #require(try service.store.loadLoginKeyring(user: "alice"))
        #expect(new.publicKey != old.publicKey && new.sealedPassword == nil)
        #expect(try releasedPassword(service, "482916") == nil)
    }

    @Test func aStaleFileFromAnotherRecordIsReplacedAtVerification() throws {
        let service = keyringService()
        _ = try enrol(service)
        let stale = LoginKeyringFile(
            publicKey: try LoginKeyring.keyPair(vaultKey: SecureRandom.secret(32), user: "alice").publicKey,
            sealedPassword: [UInt8](repeating: 1, count: 60))
        try service.store.saveLoginKeyring(stale, user: "alice")
        var result = try service.verifyOpeningLoginKeyring(ScriptedInteraction(["482916"]), method: nil, release: true)
        let released = result.password.take() != nil
        #expect(!released)
        #expect(result.withheld == "no login password is sealed")
        let now = try #require(try service.store.loadLoginKeyring(user: "alice"))
        #expect(now.publicKey != stale.publicKey && now.sealedPassword == nil)
    }

    @Test func aDamagedFileIsNamedReplacedAndNeverFailsTheVerification() throws {
        let logs = LogCapture()
        var service = keyringService()
        service = PINService(
            store: service.store, configuration: service.configuration, user: "alice",
            logger: logs.logger(label: "test", level: .debug))
        _ = try enrol(service)
        try service.sealLoginPassword(password("damaged-pw-7f3a"))
        let path = service.store.loginKeyringPath(for: "alice")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count - 3).write(to: URL(fileURLWithPath: path))
        #expect {
            try service.sealLoginPassword(password("pw2"))
        } throws: { ($0 as? ServiceError)?.code == "store-corrupt" }
        let result = try service.verifyOpeningLoginKeyring(ScriptedInteraction(["482916"]), method: nil, release: true)
        #expect(result.report.outcome == .verified(method: .pin))
        #expect(result.withheld == "no login password is sealed")
        #expect(logs.lines.contains { $0.contains("damaged") && $0.contains("truncated") })
        #expect(!logs.lines.joined().contains("damaged-pw-7f3a"))
        try service.sealLoginPassword(password("pw3"))  // the replaced file takes the next password
        #expect(try releasedPassword(service, "482916") == "pw3")
    }

    @Test func offKeepsNothing() throws {
        let service = keyringService(on: false)
        _ = try enrol(service)
        #expect {
            try service.sealLoginPassword(password("pw"))
        } throws: { ($0 as? ServiceError)?.code == "permission-denied" }
        #expect(try service.store.loadLoginKeyring(user: "alice") == nil)
    }

    @Test(arguments: ["", "a\u{0}b", String(repeating: "x", count: 1025)])
    func passwordsThatCannotBeKeptAreRefused(text: String) throws {
        let service = keyringService()
        _ = try enrol(service)
        #expect { try service.sealLoginPassword(password(text)) } throws: { ($0 as? ServiceError)?.code == "input" }
    }

    @Test func deriveCannotNameTheReservedKey() {
        #expect(ApplicationName("tokenpin:login-keyring") == nil)
    }
}
