import Foundation
import Testing
import TokenpinCore
import TokenpinPKCS11
import TokenpinTestSupport

@testable import TokenpinService

/// The test module that wraps SoftHSM (Support/wrapper-module.c) to give its token a keypad or a slot it can be
/// pulled from, compiled once per run.
enum WrapperModule {
    static let path: String? = {
        guard let compiler = Tools.compiler, Tools.hasSoftHSM else { return nil }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Support/wrapper-module.c"
        let output = temporaryDirectory("wrapper-module") + "/wrapper.so"
        let result = try? run(
            compiler,
            ["-std=gnu11", "-Wall", "-Werror", "-shared", "-fPIC", "-o", output, source, "-I/usr/include/p11-kit-1"])
        return result?.status == 0 ? output : nil
    }()

    /// The environment the helper runs the wrapper in: SoftHSM's, with the wrapper's settings.
    static func environment(_ softHSM: SoftHSM, _ settings: [String: String]) -> [String] {
        softHSM.environment.merging(["TOKENPIN_WRAP_INNER": softHSM.module]) { $1 }.merging(settings) { $1 }
            .map { "\($0.key)=\($0.value)" }
    }
}

/// A SoftHSM token `ci` with one P-256 key behind the wrapper in keypad mode: its `C_Login` takes no PIN and passes
/// on what was "typed on the keypad", read from a file, one line per login; a service for alice, enrolled.
private struct KeypadToken {
    let softHSM: SoftHSM
    let keys: String
    let service: PINService

    init(fallback: FallbackPolicy = .allow) throws {
        softHSM = try SoftHSM()
        try softHSM.initToken(label: "ci")
        try softHSM.generateKey(token: "ci", type: "EC:prime256v1", id: "01", label: "k1")
        keys = softHSM.directory + "/keypad"
        var configuration = Configuration()
        configuration.kdfMemoryMiB = 8
        configuration.kdfPasses = 1
        configuration.fallback = fallback
        configuration.pkcs11Module = WrapperModule.path
        var service = PINService(
            store: RecordStore(directory: softHSM.directory + "/store"), configuration: configuration,
            user: "alice", selection: CardSelection(application: .pkcs11))
        service.pkcs11.helper = Tools.helper
        service.pkcs11.environment = WrapperModule.environment(softHSM, ["TOKENPIN_WRAP_KEYPAD": keys])
        _ = try service.enrol(ScriptedInteraction(["482916", "482916"]))
        self.service = service
    }

    /// What the keypad will be typed, one entry per login.
    func type(_ entries: String...) throws {
        try (entries.joined(separator: "\n") + "\n").write(toFile: keys, atomically: false, encoding: .utf8)
    }

    /// Entries not read yet.
    var entriesLeft: Int {
        ((try? String(contentsOfFile: keys, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// The keypad notice: where to type (the slot), with no number of tries (SoftHSM tells none).
    var notice: Event? {
        guard let token = try? service.openPKCS11Token(uri: nil) else { return nil }
        defer { token.close() }
        #expect(token.usesKeypad)
        return .keypadEntry(reader: token.keypadName, card: token.promptName, triesLeft: cardTriesUntold)
    }
}

@Suite("A PKCS#11 token with a keypad (protected authentication path)", .enabled(if: WrapperModule.path != nil))
struct KeypadTokenTests {
    @Test("bind and verify: no card PIN prompt, no PIN sent, the person told to use the keypad")
    func bindAndVerify() throws {
        let token = try KeypadToken()
        let notice = try #require(token.notice)
        try token.type("123456", "123456")
        let enable = ScriptedInteraction(["482916"])
        _ = try token.service.enableToken(enable)
        #expect(enable.prompts == [.pin])
        #expect(enable.events.contains(notice))
        let verify = ScriptedInteraction([])
        let report = try token.service.verify(verify, method: .token)
        #expect(report.outcome == .verified(method: .token))
        #expect(verify.prompts.isEmpty)
        #expect(verify.events.first == notice)
        #expect(token.entriesLeft == 0)
    }

    @Test("a wrong entry on the keypad: a wrong card PIN, the PIN fallback, tokenpin's counter untouched")
    func wrongEntry() throws {
        let token = try KeypadToken()
        let notice = try #require(token.notice)
        try token.type("123456", "999999")
        _ = try token.service.enableToken(ScriptedInteraction(["482916"]))
        let script = ScriptedInteraction(["482916"])
        let report = try token.service.verify(script)
        #expect(report.outcome == .verified(method: .pin))
        #expect(report.tokenFailure?.contains("wrong card PIN") == true)
        #expect(script.prompts == [.pin])
        #expect(script.events.contains(notice))
        #expect(try token.service.status().remaining == 5)
    }

    @Test("cancelled on the keypad: nothing counted; with fallback = deny the token is refused, no PIN asked")
    func cancelled() throws {
        let token = try KeypadToken(fallback: .deny)
        try token.type("123456", "CANCEL")
        _ = try token.service.enableToken(ScriptedInteraction(["482916"]))
        let script = ScriptedInteraction([])
        let report = try token.service.verify(script)
        guard case .tokenRejected(let reason) = report.outcome else {
            Issue.record("a cancelled keypad entry: \(report.outcome)")
            return
        }
        #expect(reason.contains("cancelled"), "\(reason)")
        #expect(reason.contains("nothing was counted"), "\(reason)")
        #expect(script.prompts.isEmpty)
        #expect(try token.service.status().remaining == 5)
    }
}
