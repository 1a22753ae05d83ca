import Foundation
import Testing
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPKCS11
import TokenpinTestSupport

/// The key types the tests make with pkcs11-tool, and the algorithm tokenpin must find for each.
struct KeyKind: CustomTestStringConvertible, Sendable {
    var pkcs11ToolType: String
    var algorithm: PKCS11KeyAlgorithm
    var testDescription: String { pkcs11ToolType }

    static let all: [KeyKind] = [
        KeyKind(pkcs11ToolType: "EC:prime256v1", algorithm: .ecdh(.nistP256)),
        KeyKind(pkcs11ToolType: "EC:secp384r1", algorithm: .ecdh(.nistP384)),
        KeyKind(pkcs11ToolType: "EC:brainpoolP256r1", algorithm: .ecdh(.brainpoolP256r1)),
        KeyKind(pkcs11ToolType: "EC:brainpoolP384r1", algorithm: .ecdh(.brainpoolP384r1)),
        // SoftHSM lists CKM_RSA_PKCS_OAEP, so OAEP is what tokenpin uses.
        KeyKind(pkcs11ToolType: "rsa:2048", algorithm: .rsa(bits: 2048, padding: .oaep)),
    ]
}

/// SoftHSM2 through the helper: tokens made by softhsm2-util, keys by pkcs11-tool, each in a private
/// `SOFTHSM2_CONF`; every secret checked against the one computed here from the public key.
@Suite("SoftHSM2 through tokenpin-pkcs11", .enabled(if: Tools.hasSoftHSM))
struct SoftHSMTests {
    @Test(
        "the helper finds the key, and the token's answer is the secret computed from its public key",
        arguments: KeyKind.all)
    func deriveOrDecrypt(kind: KeyKind) throws {
        let hsm = try SoftHSM()
        try hsm.initToken(label: "ci")
        try hsm.generateKey(token: "ci", type: kind.pkcs11ToolType, id: "01", label: "tokenpin")
        let token = try PKCS11TokenKey.open(
            module: .path(hsm.module), uri: nil, executable: Tools.helper, environment: hsm.environmentList)
        defer { token.close() }
        #expect(token.algorithm == kind.algorithm)
        #expect(token.key.id == [0x01])
        #expect(token.key.label == "tokenpin")
        #expect(!token.key.privateKeySeen, "SoftHSM hides private keys until login")
        #expect(token.token.label == "ci")
        #expect(token.token.manufacturer == "SoftHSM project")
        #expect(token.token.model == "SoftHSM v2")
        #expect(token.uri.contains("token=ci") && token.uri.contains("id=%01") && token.uri.contains("type=private"))
        #expect(token.identity.hasPrefix("pkcs11-key:") && token.identity.count == 27)

        let challenge = try PKCS11Challenge.fresh(for: token.key)
        let answer = try token.answer(pin: secret("123456"), challenge: challenge.challenge)
        let matches = answer.isEqual(to: challenge.secret)
        #expect(matches)
        // bind() makes its own challenge and compares in the same way.
        let bound = try token.bind(pin: secret("123456"))
        let length = bound.secret.count
        #expect(length == challenge.secret.count)
    }

    @Test("a wrong PIN is a wrong PIN (CKR_PIN_INCORRECT), a right one still works after it")
    func wrongPIN() throws {
        let hsm = try SoftHSM()
        try hsm.initToken(label: "ci")
        try hsm.generateKey(token: "ci", type: "EC:prime256v1", id: "01", label: "k")
        let helper = try hsm.helper()
        defer { helper.stop() }
        let key = try helper.selectKey()
        let challenge = try PKCS11Challenge.fresh(for: key)
        #expect(throws: PKCS11TokenError.self) {
            _ = try helper.answer(key, pin: secret("654321"), challenge: challenge.challenge)
        }
        do {
            _ = try helper.answer(key, pin: secret("654321"), challenge: challenge.challenge)
        } catch {
            guard case .wrongPIN = error else {
                Issue.record("expected a wrong PIN, got \(error)")
                return
            }
        }
        // No PIN at all for a token that needs one: refused before anything reaches the token.
        do {
            _ = try helper.answer(key, pin: nil, challenge: challenge.challenge)
            Issue.record("no PIN was accepted")
        } catch {
            #expect(
                error == .invalidRequest("the token needs its PIN and none was given; nothing was sent to the token"))
        }
        let answer = try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
        let matches = answer.isEqual(to: challenge.secret)
        #expect(matches)
    }

    @Test("C_SetPIN changes the token PIN: the new one logs in, the old one is wrong")
    func changePIN() throws {
        let hsm = try SoftHSM()
        try hsm.initToken(label: "ci")
        try hsm.generateKey(token: "ci", type: "EC:prime256v1", id: "01", label: "k")
        let helper = try hsm.helper()
        defer { helper.stop() }
        let key = try helper.selectKey()
        try helper.changePIN(key, current: secret("123456"), new: secret("24681357"))
        let challenge = try PKCS11Challenge.fresh(for: key)
        let answer = try helper.answer(key, pin: secret("24681357"), challenge: challenge.challenge)
        let matches = answer.isEqual(to: challenge.secret)
        #expect(matches)
        do {
            _ = try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
            Issue.record("the old PIN still logs in")
        } catch {
            guard case .wrongPIN = error else { throw error }
        }
        // A wrong current PIN changes nothing.
        do {
            try helper.changePIN(key, current: secret("000000"), new: secret("11112222"))
            Issue.record("a wrong current PIN changed the PIN")
        } catch {
            guard case .wrongPIN = error else { throw error }
        }
        // A new PIN the token cannot take is refused before the call.
        #expect(throws: PKCS11TokenError.self) {
            try helper.changePIN(key, current: secret("24681357"), new: secret(String(repeating: "9", count: 300)))
        }
    }
}
