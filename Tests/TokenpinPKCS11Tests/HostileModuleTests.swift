import Foundation
import Testing
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPKCS11
import TokenpinTestSupport

/// The test-only module (Support/hostile-module.c), compiled once per run with the system's C compiler against
/// p11-kit's pkcs11.h.
enum HostileModule {
    static let path: String? = {
        guard let compiler = Tools.compiler else { return nil }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Support/hostile-module.c"
        let output = temporaryDirectory("hostile-module") + "/hostile.so"
        let flags =
            (try? run("/usr/bin/pkg-config", ["--cflags", "p11-kit-1"]))?.output
            .split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
            ?? ["-I/usr/include/p11-kit-1"]
        let result = try? run(
            compiler, ["-std=c11", "-Wall", "-Werror", "-shared", "-fPIC", "-o", output, source] + flags)
        return result?.status == 0 ? output : nil
    }()

    /// A helper running the module in `mode` (TOKENPIN_HOSTILE).
    static func helper(_ mode: String, timeout: Int = 10_000) throws(PKCS11TokenError) -> PKCS11Helper {
        try PKCS11Helper.start(
            module: .path(path ?? "/nonexistent"), timeout: timeout, executable: Tools.helper,
            environment: ["TOKENPIN_HOSTILE=\(mode)", "PATH=/usr/bin:/bin"])
    }

    /// The honest answer for a point: the module's private scalar is 1, so the secret is the point's x coordinate.
    static func expectedSecret(_ point: [UInt8]) -> [UInt8] { Array(point[1...32]) }
}

/// Expects `body` to throw a `PKCS11TokenError` that `check` accepts.
func expectTokenError<R: ~Copyable>(
    matching check: (PKCS11TokenError) -> Bool, in body: () throws(PKCS11TokenError) -> R,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    do {
        _ = try body()
        Issue.record("no error", sourceLocation: sourceLocation)
    } catch {
        #expect(check(error), "unexpected error: \(error)", sourceLocation: sourceLocation)
    }
}

/// A module that answers wrong lengths, absurd counts, another secret, or hangs or crashes: every case ends in a
/// clear error, the caller (this test process) alive and the helper gone or still usable as the case says.
@Suite("A hostile PKCS#11 module", .enabled(if: HostileModule.path != nil))
struct HostileModuleTests {
    @Test("the honest module: its key is found, bound, and a wrong PIN is a wrong PIN")
    func honest() throws {
        let helper = try HostileModule.helper("honest")
        defer { helper.stop() }
        let key = try helper.selectKey()
        #expect(key.algorithm == .ecdh(.nistP256))
        #expect(key.privateKeySeen)
        #expect(key.token.serial == "HOSTILE1")
        let challenge = try PKCS11Challenge.fresh(for: key)
        let answer = try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
        #expect(bytes(answer) == HostileModule.expectedSecret(challenge.challenge))
        let matches = answer.isEqual(to: challenge.secret)
        #expect(matches)
        expectTokenError(
            matching: { $0 == .wrongPIN(.unknown) },
            in: { () throws(PKCS11TokenError) in
                try helper.answer(key, pin: secret("999999"), challenge: challenge.challenge)
            })
    }

    @Test(
        "impossible counts and lengths are refused as malformed, naming the call",
        arguments: [
            ("absurd-slots", "C_GetSlotList reports 1099511627776 slots"),
            ("slot-overfill", "C_GetSlotList filled 5 of 1 slots"),
            ("long-attribute", "is 1073741824 bytes"),
            ("attribute-grows", "grew from 67 to 4096 bytes"),
            ("find-overfill", "C_FindObjects found"),
        ])
    func impossibleListings(mode: String, detail: String) throws {
        let helper = try HostileModule.helper(mode)
        defer { helper.stop() }
        expectTokenError(
            matching: { error in
                guard case .malformed(let why) = error else { return false }
                return why.contains(detail)
            }, in: { () throws(PKCS11TokenError) in try helper.inventory() })
        // The helper survived its module's answer and still serves.
        expectTokenError(
            matching: {
                if case .malformed = $0 { true } else { false }
            }, in: { () throws(PKCS11TokenError) in try helper.inventory() })
    }

    @Test("a public point off its curve makes the key unusable, saying why")
    func pointOffCurve() throws {
        let helper = try HostileModule.helper("bad-point")
        defer { helper.stop() }
        let inventory = try helper.inventory()
        #expect(inventory.keys.isEmpty)
        #expect(inventory.listings.first?.unusable.first?.contains("not on nistP256") == true, "\(inventory)")
        expectTokenError(
            matching: { error in
                guard case .noToken(let why) = error else { return false }
                return why.contains("not on nistP256")
            }, in: { () throws(PKCS11TokenError) in try helper.selectKey() })
    }

    @Test(
        "a derived secret of the wrong length is refused",
        arguments: [("short-secret", "the derived secret is 31 bytes"), ("long-secret", "changed its length to 33")])
    func wrongSecretLength(mode: String, detail: String) throws {
        let helper = try HostileModule.helper(mode)
        defer { helper.stop() }
        let key = try helper.selectKey()
        let challenge = try PKCS11Challenge.fresh(for: key)
        expectTokenError(
            matching: { error in
                guard case .malformed(let why) = error else { return false }
                return why.contains(detail)
            },
            in: { () throws(PKCS11TokenError) in
                try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
            })
    }

    @Test("a derive that returns another secret is caught by the binding check")
    func otherSecret() throws {
        let token = try PKCS11TokenKey.open(
            module: .path(HostileModule.path!), uri: nil, executable: Tools.helper,
            environment: ["TOKENPIN_HOSTILE=other-secret"])
        defer { token.close() }
        expectTokenError(
            matching: { error in
                guard case .malformed(let why) = error else { return false }
                return why.contains("does not match its public key")
            }, in: { () throws(PKCS11TokenError) in try token.bind(pin: secret("123456")) })
    }

    @Test(
        "decrypted data longer than its buffer, or of the wrong length, is refused",
        arguments: [("decrypt-overflow", "C_Decrypt wrote"), ("decrypt-short", "C_Decrypt gave 16 bytes")])
    func decryptLengths(mode: String, detail: String) throws {
        let helper = try HostileModule.helper(mode)
        defer { helper.stop() }
        let key = try helper.selectKey(uri: "pkcs11:id=%02")
        #expect(key.algorithm == .rsa(bits: 2048, padding: .pkcs1))
        expectTokenError(
            matching: { error in
                guard case .malformed(let why) = error else { return false }
                return why.contains(detail)
            },
            in: { () throws(PKCS11TokenError) in
                try helper.answer(key, pin: secret("123456"), challenge: SecureRandom.bytes(256))
            })
    }

    @Test("a locked PIN is reported without a login: no try is spent")
    func locked() throws {
        let helper = try HostileModule.helper("locked")
        defer { helper.stop() }
        let key = try helper.selectKey()
        #expect(key.token.pinTries == .locked)
        let challenge = try PKCS11Challenge.fresh(for: key)
        expectTokenError(
            matching: { $0 == .pinLocked },
            in: { () throws(PKCS11TokenError) in
                try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
            })
    }

    @Test("a module that hangs in C_Login is stopped at the timeout and reported as not answering")
    func hangsInLogin() throws {
        let helper = try HostileModule.helper("hang-login", timeout: 1000)
        defer { helper.stop() }
        let key = try helper.selectKey()
        let challenge = try PKCS11Challenge.fresh(for: key)
        let started = Date()
        expectTokenError(
            matching: { error in
                guard case .notAnswering(let why) = error else { return false }
                return why.contains("did not answer within 1 s while logging in and deriving") && error.isTransport
            },
            in: { () throws(PKCS11TokenError) in
                try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
            })
        #expect(Date().timeIntervalSince(started) < 8)
        // The helper is gone: the next call fails at once with the same reason.
        let again = Date()
        expectTokenError(
            matching: {
                if case .notAnswering = $0 { true } else { false }
            }, in: { () throws(PKCS11TokenError) in try helper.inventory() })
        #expect(Date().timeIntervalSince(again) < 1)
    }

    @Test("a module that hangs in C_Initialize makes start fail at the timeout")
    func hangsAtStart() {
        let started = Date()
        expectTokenError(
            matching: {
                error in
                guard case .notAnswering(let why) = error else { return false }
                return why.contains("while loading")
            }, in: { () throws(PKCS11TokenError) in try HostileModule.helper("hang-init", timeout: 1000) })
        #expect(Date().timeIntervalSince(started) < 8)
    }

    @Test(
        "a module that crashes is a helper that ended by SIGSEGV, the caller alive",
        arguments: ["crash-init", "crash-login", "crash-derive"])
    func crashes(mode: String) throws {
        if mode == "crash-init" {
            expectTokenError(
                matching: { error in
                    guard case .helperFailed(let why) = error else { return false }
                    return why.contains("SIGSEGV") && why.contains("while loading")
                }, in: { () throws(PKCS11TokenError) in try HostileModule.helper(mode) })
            return
        }
        let helper = try HostileModule.helper(mode)
        defer { helper.stop() }
        let key = try helper.selectKey()
        let challenge = try PKCS11Challenge.fresh(for: key)
        expectTokenError(
            matching: { error in
                guard case .helperFailed(let why) = error else { return false }
                return why.contains("killed by signal 11 (SIGSEGV) while logging in and deriving") && error.isTransport
            },
            in: { () throws(PKCS11TokenError) in
                try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
            })
    }

    @Test("a module that crashes when finalized (as SoftHSM with OpenSSL 3 can) costs nothing: the answer came first")
    func crashesAtExit() throws {
        let helper = try HostileModule.helper("crash-finalize")
        let key = try helper.selectKey()
        let challenge = try PKCS11Challenge.fresh(for: key)
        let answer = try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
        let matches = answer.isEqual(to: challenge.secret)
        #expect(matches)
        let started = Date()
        helper.stop()
        #expect(Date().timeIntervalSince(started) < 3)
    }

    @Test("what a module prints on standard output never reaches the protocol")
    func printsToStandardOutput() throws {
        let helper = try HostileModule.helper("print-stdout")
        defer { helper.stop() }
        let key = try helper.selectKey()
        let challenge = try PKCS11Challenge.fresh(for: key)
        let answer = try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
        #expect(bytes(answer) == HostileModule.expectedSecret(challenge.challenge))
    }
}

/// A helper that is not one: what it sends is refused as strictly as what a module answers.
@Suite("A hostile helper")
struct HostileHelperTests {
    /// A shell script standing in for tokenpin-pkcs11; its standard input is the socket.
    static func fakeHelper(_ body: String) throws -> String {
        try executableScript(body, in: temporaryDirectory("fake-helper"))
    }

    @Test(
        "garbage, an absurd frame length, a truncated frame or silence from the helper are clear errors",
        arguments: [
            ("printf '\\377\\377\\377\\377' >&0; sleep 5", "too-long"),
            ("printf '\\000\\000\\000\\003\\201\\000' >&0; exit 0", "closed"),
            ("printf '\\000\\000\\000\\001\\177' >&0; sleep 5", "unknown"),
            ("sleep 30", "timeout"),
            ("exit 7", "exited with status 7"),
        ])
    func garbage(script: String, what: String) throws {
        let path = try Self.fakeHelper(script)
        let started = Date()
        do {
            _ = try PKCS11Helper.start(
                module: .p11kit, timeout: 1000, executable: path, environment: ["PATH=/usr/bin:/bin"])
            Issue.record("a fake helper was taken")
        } catch {
            switch (error, what) {
            case (.malformed(let why), "too-long"): #expect(why.contains("a frame of 4294967295 bytes"))
            case (.malformed(let why), "unknown"): #expect(why.contains("an unknown reply"))
            case (.helperFailed(let why), "closed"): #expect(why.contains("while loading"))
            case (.notAnswering(let why), "timeout"): #expect(why.contains("within 1 s"))
            case (.helperFailed(let why), let status): #expect(why.contains(status), "\(why)")
            default: Issue.record("\(what): \(error)")
            }
        }
        #expect(Date().timeIntervalSince(started) < 8)
    }

    @Test("a helper that does not exist is a clear error naming where it was looked for")
    func missing() {
        expectTokenError(
            matching: { error in
                guard case .helperFailed(let why) = error else { return false }
                return why.contains("/nonexistent/tokenpin-pkcs11") && why.contains("No such file")
            },
            in: { () throws(PKCS11TokenError) in
                try PKCS11Helper.start(module: .p11kit, executable: "/nonexistent/tokenpin-pkcs11")
            })
    }

    @Test("a module path that is not absolute is refused before anything starts")
    func relativeModule() {
        expectTokenError(
            matching: {
                if case .invalidRequest = $0 { true } else { false }
            }, in: { () throws(PKCS11TokenError) in try PKCS11Helper.start(module: .path("libsofthsm2.so")) })
    }

    @Test("a module that cannot be loaded is a helper failure with the dynamic linker's reason")
    func unloadable() {
        expectTokenError(
            matching: { error in
                guard case .helperFailed(let why) = error else { return false }
                return why.contains("cannot load the PKCS#11 module /nonexistent/module.so")
            },
            in: { () throws(PKCS11TokenError) in
                try PKCS11Helper.start(module: .path("/nonexistent/module.so"), executable: Tools.helper)
            })
    }
}
