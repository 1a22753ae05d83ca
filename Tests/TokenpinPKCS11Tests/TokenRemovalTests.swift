import Foundation
import Testing
import TokenpinCore
import TokenpinPKCS11
import TokenpinTestSupport

@testable import TokenpinService

/// A SoftHSM token `ci` with a P-256 key behind the wrapper module, whose slot holds it only while a marker file
/// exists: a token pulled from its reader and put back.
private struct RemovableToken {
    let softHSM: SoftHSM
    let marker: String
    let environment: [String]

    init(slotEvents: Bool) throws {
        softHSM = try SoftHSM()
        try softHSM.initToken(label: "ci")
        try softHSM.generateKey(token: "ci", type: "EC:prime256v1", id: "01", label: "k1")
        marker = softHSM.directory + "/present"
        var settings = ["TOKENPIN_WRAP_PRESENT": marker]
        if slotEvents { settings["TOKENPIN_WRAP_EVENTS"] = "1" }
        environment = WrapperModule.environment(softHSM, settings)
        insert()
    }

    func insert() { _ = FileManager.default.createFile(atPath: marker, contents: nil) }
    func pull() { try? FileManager.default.removeItem(atPath: marker) }

    var access: PKCS11Access {
        var access = PKCS11Access(module: WrapperModule.path, helper: Tools.helper, environment: environment)
        access.timeoutMilliseconds = 10_000
        return access
    }
}

@Suite(
    "A PKCS#11 token pulled from its slot (SoftHSM behind the wrapper module)", .enabled(if: WrapperModule.path != nil))
struct TokenRemovalTests {
    @Test(
        "the helper sees the token leave and come back; with slot events a present token costs one call",
        arguments: [false, true])
    func helperPresence(slotEvents: Bool) throws {
        let token = try RemovableToken(slotEvents: slotEvents)
        let key = try PKCS11TokenKey.open(
            module: .path(WrapperModule.path!), uri: nil, executable: Tools.helper, environment: token.environment)
        defer { key.close() }
        // The first answers read the slot (the module reports its slot's state as an event once, as OpenSC does).
        #expect(try key.helper.isPresent(key.key))
        #expect(try key.helper.isPresent(key.key))
        #expect(try key.helper.isPresent(key.key))
        // C_WaitForSlotEvent(CKF_DONT_BLOCK) said nothing happened: nothing else was asked. Without it: the slot
        // list, the slot's flags and the token's serial (C_GetSlotList, C_GetSlotInfo, C_GetTokenInfo twice).
        if slotEvents { #expect(key.helper.lastCalls == 1) } else { #expect(key.helper.lastCalls > 1) }
        token.pull()
        #expect(try key.helper.isPresent(key.key) == false)
        token.insert()
        #expect(try key.helper.isPresent(key.key))
    }

    @Test("the daemon's probe: present, pulled, back; another key under the URI is not the bound token")
    func probe() throws {
        let token = try RemovableToken(slotEvents: false)
        let key = try PKCS11TokenKey.open(
            module: .path(WrapperModule.path!), uri: nil, executable: Tools.helper, environment: token.environment)
        let (uri, identity) = (key.uri, key.identity)
        key.close()
        let probe = PKCS11PresenceProbe(uri: uri, identity: identity, access: token.access)
        defer { probe.close() }
        #expect(probe.isPresent())
        token.pull()
        #expect(!probe.isPresent())
        #expect(!probe.isPresent())
        token.insert()
        #expect(probe.isPresent())
        let other = PKCS11PresenceProbe(uri: uri, identity: "pkcs11-key:0000000000000000", access: token.access)
        defer { other.close() }
        #expect(!other.isPresent())
        var binding = TokenBinding(
            serial: identity, cardPublicKey: Data(), ephemeralPublicKey: Data(), application: "pkcs11")
        binding.uri = uri
        #expect(token.access.reader(holding: binding) == uri)
        binding.serial = "pkcs11-key:0000000000000000"
        #expect(token.access.reader(holding: binding) == nil)
    }

    @Test("SoftHSM itself: a token deleted (softhsm2-util --delete-token) is gone within the probe's fresh look")
    func softHSMTokenDeleted() throws {
        let softHSM = try SoftHSM()
        try softHSM.initToken(label: "ci")
        try softHSM.generateKey(token: "ci", type: "EC:prime256v1", id: "01", label: "k1")
        let key = try PKCS11TokenKey.open(
            module: .path(softHSM.module), uri: nil, executable: Tools.helper, environment: softHSM.environmentList)
        let (uri, identity) = (key.uri, key.identity)
        key.close()
        let access = PKCS11Access(module: softHSM.module, helper: Tools.helper, environment: softHSM.environmentList)
        let probe = PKCS11PresenceProbe(uri: uri, identity: identity, access: access, freshEvery: 2)
        defer { probe.close() }
        #expect(probe.isPresent())
        let deleted = try run(
            Tools.softHSMUtil!, ["--delete-token", "--token", "ci"], environment: softHSM.environment)
        #expect(deleted.status == 0, "\(deleted.output)\(deleted.errors)")
        // SoftHSM's process keeps the deleted token: the helper still sees it until a new one looks.
        let answers = (0..<3).map { _ in probe.isPresent() }
        #expect(answers.last == false, "\(answers)")
    }
}
