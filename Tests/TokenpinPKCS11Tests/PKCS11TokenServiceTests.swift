import Foundation
import Testing
import TokenpinCore
import TokenpinPKCS11
import TokenpinTestSupport

@testable import TokenpinService

/// A PINService for `alice` whose PKCS#11 tokens are this SoftHSM's, with a record enrolled under PIN 482916.
private func pkcs11Service(
    _ softHSM: SoftHSM, uri: String? = nil, mode: VerificationMode = .either, fallback: FallbackPolicy = .allow
) throws -> PINService {
    var configuration = Configuration()
    configuration.kdfMemoryMiB = 8
    configuration.kdfPasses = 1
    configuration.mode = mode
    configuration.fallback = fallback
    configuration.pkcs11Module = softHSM.module
    var service = PINService(
        store: RecordStore(directory: temporaryDirectory("pkcs11-service") + "/store"),
        configuration: configuration, user: "alice",
        selection: CardSelection(application: .pkcs11, tokenURI: uri))
    service.pkcs11.helper = Tools.helper
    service.pkcs11.environment = softHSM.environmentList
    _ = try service.enrol(ScriptedInteraction(["482916", "482916"]))
    return service
}

/// A SoftHSM with one token `ci` (user PIN 123456) and the keys given (`EC:prime256v1`, `rsa:2048`) under ids 01, 02...
private func softHSM(keys: [String]) throws -> SoftHSM {
    let softHSM = try SoftHSM()
    try softHSM.initToken(label: "ci")
    for (index, type) in keys.enumerated() {
        try softHSM.generateKey(token: "ci", type: type, id: "0\(index + 1)", label: "k\(index + 1)")
    }
    return softHSM
}

/// The record's token binding.
private func binding(_ service: PINService) throws -> TokenBinding? {
    try service.store.load(user: "alice")?.slot(.token)?.token
}

@Suite("The PKCS#11 token application through the service (SoftHSM2)", .enabled(if: Tools.hasSoftHSM))
struct PKCS11TokenServiceTests {
    @Test(
        "enrol, toggle token on --app pkcs11, verify by token, re-sealed after each verify",
        arguments: [
            ("EC:prime256v1", "nistp256"), ("EC:secp384r1", "nistp384"), ("EC:brainpoolP256r1", "brainpoolP256r1"),
            ("rsa:2048", "rsa2048"),
        ])
    func bindsAndVerifies(keyType: String, algorithm: String) throws {
        let hsm = try softHSM(keys: [keyType])
        let service = try pkcs11Service(hsm)
        let enable = ScriptedInteraction(["482916", "123456"])
        _ = try service.enableToken(enable)
        #expect(enable.prompts.count == 2)
        guard case .cardPIN(let name, let tries) = enable.prompts.last else {
            Issue.record("the second prompt is not the card PIN: \(enable.prompts)")
            return
        }
        #expect(name.contains("token 'ci'"))
        #expect(tries == cardTriesUntold)  // SoftHSM sets no tries flags: no number is shown
        let bound = try #require(try binding(service))
        #expect(bound.application == "pkcs11")
        #expect(bound.serial.hasPrefix("pkcs11-key:"))
        #expect(bound.uri?.hasPrefix("pkcs11:") == true)
        #expect(bound.uri?.contains("id=%01") == true)
        #expect(bound.algorithm == algorithm)
        #expect(bound.rsaPadding == (keyType.hasPrefix("rsa") ? "oaep-sha1" : nil))
        #expect(bound.problem == nil)

        let first = try service.verify(ScriptedInteraction(["123456"]), method: .token)
        #expect(first.outcome == .verified(method: .token))
        #expect(first.card?.serial == bound.serial)
        #expect(first.card?.removalWatch == .ownWatch, "no PC/SC event names a key's URI: the daemon watches it")
        let resealed = try #require(try binding(service))
        #expect(resealed.ephemeralPublicKey != bound.ephemeralPublicKey)
        #expect(
            try service.verify(ScriptedInteraction(["123456"]), method: .token).outcome == .verified(method: .token))
        #expect((try service.status()).remaining == 5)
    }

    @Test("a wrong token PIN: counted on the token, not on tokenpin's PIN; falls back to the PIN per policy")
    func wrongTokenPIN() throws {
        let hsm = try softHSM(keys: ["EC:prime256v1"])
        let service = try pkcs11Service(hsm)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        let fallback = ScriptedInteraction(["000000", "482916"])
        let report = try service.verify(fallback)
        #expect(report.outcome == .verified(method: .pin))
        #expect(report.tokenFailure?.contains("wrong card PIN") == true)
        #expect(fallback.prompts.last == .pin)
        #expect((try service.status()).remaining == 5)

        var strict = service
        var configuration = service.configuration
        configuration.fallback = .deny
        strict = PINService(
            store: service.store, configuration: configuration, user: "alice", selection: service.selection)
        strict.pkcs11 = service.pkcs11
        let denied = ScriptedInteraction(["000000"])
        let refused = try strict.verify(denied)
        guard case .tokenRejected(let reason) = refused.outcome else {
            Issue.record("fallback = deny: \(refused.outcome)")
            return
        }
        #expect(reason.contains("wrong card PIN"))
        #expect(denied.prompts.count == 1)
        #expect((try strict.status()).remaining == 5)
    }

    @Test("a key whose URI a record cannot keep is refused before it is bound: too long, or p11-kit's bare fallback")
    func overlongURIIsRefused() {
        let long = "pkcs11:token=ci;id=" + String(repeating: "%AB", count: 350)
        #expect(PKCS11Token.uriProblem(long)?.contains("is \(long.utf8.count) bytes") == true)
        #expect(PKCS11Token.uriProblem("pkcs11:")?.contains("8 to 1024 bytes") == true)
        #expect(PKCS11Token.uriProblem("slot:1") != nil)
        let longest = "pkcs11:id=" + String(repeating: "a", count: 1024 - 10)
        #expect(PKCS11Token.uriProblem(longest) == nil)
        #expect(PKCS11Token.uriProblem(longest + "a") != nil)
        #expect(PKCS11Token.uriProblem("pkcs11:token=ci;id=%01;type=private") == nil)
    }

    @Test("two usable keys and no --token-uri: refused with both URIs, before any PIN is asked")
    func ambiguityRefused() throws {
        let hsm = try softHSM(keys: ["EC:prime256v1", "rsa:2048"])
        let service = try pkcs11Service(hsm)
        let script = ScriptedInteraction(["482916", "123456"])
        #expect {
            _ = try service.enableToken(script)
        } throws: { error in
            guard case ServiceError.usage(let message) = error else { return false }
            return message.contains("--token-uri") && message.contains("id=%01") && message.contains("id=%02")
        }
        #expect(script.prompts.isEmpty)
        #expect(try binding(service) == nil)

        let chosen = try pkcs11Service(hsm, uri: "pkcs11:token=ci;id=%02")
        _ = try chosen.enableToken(ScriptedInteraction(["482916", "123456"]))
        #expect(try binding(chosen)?.algorithm == "rsa2048")
    }

    @Test("readers --app pkcs11 lists each key by its URI")
    func readersList() throws {
        let hsm = try softHSM(keys: ["EC:prime256v1", "rsa:2048"])
        let service = try pkcs11Service(hsm)
        let readers = try service.listReaders()
        let keys = readers.filter { $0.application == "pkcs11" }
        #expect(keys.count == 2)
        #expect(keys.allSatisfy { $0.name.hasPrefix("pkcs11:") && $0.usable && $0.cardPINTriesLeft == nil })
        #expect(Set(keys.compactMap(\.key)) == ["nistp256 (id 01)", "rsa2048 (id 02)"])
    }

    @Test("token change-pin by C_SetPIN; token unblock says to use the token's own tools")
    func changeAndUnblock() throws {
        let hsm = try softHSM(keys: ["EC:prime256v1"])
        let service = try pkcs11Service(hsm)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        try service.changeCardPIN(ScriptedInteraction(["123456", "24681357", "24681357"]))
        #expect(
            try service.verify(ScriptedInteraction(["24681357"]), method: .token).outcome == .verified(method: .token))
        #expect {
            try service.unblockCardPIN(ScriptedInteraction([]), admin: false)
        } throws: { error in
            guard case ServiceError.usage(let message) = error else { return false }
            return message.contains("SO PIN") && message.contains("own")
        }
    }

    @Test("another key under the bound URI (a re-initialized token) gets no PIN")
    func replacedKeyRefused() throws {
        let hsm = try softHSM(keys: ["EC:prime256v1"])
        let service = try pkcs11Service(hsm)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        _ = try hsm.pkcs11Tool([
            "--token-label", "ci", "--login", "--pin", "123456", "--delete-object", "--type",
            "privkey", "--id", "01",
        ])
        _ = try hsm.pkcs11Tool([
            "--token-label", "ci", "--login", "--pin", "123456", "--delete-object", "--type",
            "pubkey", "--id", "01",
        ])
        try hsm.generateKey(token: "ci", type: "EC:prime256v1", id: "01", label: "k1")
        let script = ScriptedInteraction(["482916"])
        let report = try service.verify(script)
        #expect(report.outcome == .verified(method: .pin))
        #expect(report.tokenFailure?.contains("not the bound key") == true)
        #expect(script.prompts == [.pin])
    }

    @Test(
        "a module that hangs or crashes: a clear token failure, the PIN fallback, nothing counted",
        arguments: [
            "hang-init", "crash-init",
        ])
    func hostileModule(mode: String) throws {
        guard let hostile = HostileModule.path else { return }
        let hsm = try softHSM(keys: ["EC:prime256v1"])
        var service = try pkcs11Service(hsm)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        // The module is now one that hangs or crashes while it loads.
        service.pkcs11.module = hostile
        service.pkcs11.environment = ["TOKENPIN_HOSTILE=\(mode)", "PATH=/usr/bin:/bin"]
        service.pkcs11.timeoutMilliseconds = 1_500
        let script = ScriptedInteraction(["482916"])
        let report = try service.verify(script)
        #expect(report.outcome == .verified(method: .pin))
        let failure = try #require(report.tokenFailure)
        #expect(!failure.isEmpty)
        #expect(failure.contains(mode == "hang-init" ? "answer" : "signal"), "\(failure)")
        #expect((try service.status()).remaining == 5)
    }
}
