import Foundation
import Testing
import TokenpinCore

/// Bindings to RSA and NIST/brainpool card keys: sizes checked per algorithm, the algorithm authenticated.
@Suite struct TokenBindingTests {
    static func binding(_ algorithm: String?, card: Int, ephemeral: Int, exponent: Data? = nil) -> TokenBinding {
        TokenBinding(
            serial: "000612345678", cardPublicKey: Data(repeating: 1, count: card),
            ephemeralPublicKey: Data(repeating: 2, count: ephemeral), algorithm: algorithm,
            cardPublicExponent: exponent)
    }

    @Test(
        arguments: [
            (nil, 32, 32, nil), ("nistp256", 65, 65, nil), ("nistp521", 133, 133, nil),
            ("brainpoolP512r1", 129, 129, nil),
            ("rsa2048", 256, 256, Data([1, 0, 1])), ("rsa4096", 512, 512, Data([1, 0, 1])),
        ] as [(String?, Int, Int, Data?)])
    func wellFormed(algorithm: String?, card: Int, ephemeral: Int, exponent: Data?) {
        #expect(Self.binding(algorithm, card: card, ephemeral: ephemeral, exponent: exponent).problem == nil)
    }

    @Test(
        arguments: [
            ("rsa1024", 128, 128, Data([1, 0, 1]), "token.algorithm rsa1024 is unknown"),
            ("nistp256", 32, 65, nil, "token.cardPublicKey is 32 bytes, not 65"),
            ("nistp384", 97, 65, nil, "token.ephemeralPublicKey is 65 bytes, not 97"),
            ("rsa2048", 256, 256, nil, "token.cardPublicExponent must be 1 to 8 bytes for an RSA card key"),
            ("rsa2048", 256, 256, Data(count: 9), "token.cardPublicExponent must be 1 to 8 bytes for an RSA card key"),
            ("nistp256", 65, 65, Data([3]), "token.cardPublicExponent is set for a key that is not RSA"),
            (nil, 32, 32, Data([3]), "token.cardPublicExponent is set for a key that is not RSA"),
        ] as [(String?, Int, Int, Data?, String)])
    func refusedNamingTheField(algorithm: String?, card: Int, ephemeral: Int, exponent: Data?, problem: String) {
        #expect(Self.binding(algorithm, card: card, ephemeral: ephemeral, exponent: exponent).problem == problem)
    }

    /// A PKCS#11 binding: its URI, the OAEP padding of an RSA key, and neither slot nor card-authentication key.
    static func pkcs11(
        _ algorithm: String = "nistp256", uri: String? = "pkcs11:token=ci;id=%01;type=private", padding: String? = nil
    ) -> TokenBinding {
        let rsa = algorithm.hasPrefix("rsa")
        var binding = TokenBinding(
            serial: "pkcs11-key:0123456789abcdef", cardPublicKey: Data(repeating: 1, count: rsa ? 256 : 65),
            ephemeralPublicKey: Data(repeating: 2, count: rsa ? 256 : 65), algorithm: algorithm,
            cardPublicExponent: rsa ? Data([1, 0, 1]) : nil, application: "pkcs11")
        binding.uri = uri
        binding.rsaPadding = padding
        return binding
    }

    @Test func pkcs11BindingsAreChecked() {
        #expect(Self.pkcs11().problem == nil)
        #expect(Self.pkcs11("rsa2048", padding: "oaep-sha1").problem == nil)
        #expect(Self.pkcs11("brainpoolP384r1").problem == "token.cardPublicKey is 65 bytes, not 97")
        #expect(Self.pkcs11(uri: nil).problem?.hasPrefix("token.uri must be a pkcs11: URI") == true)
        #expect(Self.pkcs11(uri: "file:///etc/passwd").problem?.hasPrefix("token.uri must be") == true)
        #expect(Self.pkcs11(uri: "pkcs11:" + String(repeating: "a", count: 1024)).problem != nil)
        #expect(
            Self.pkcs11(padding: "oaep-sha1").problem == "token.rsaPadding oaep-sha1 is not `oaep-sha1` on an RSA key")
        #expect(Self.pkcs11("rsa2048", padding: "pss").problem?.hasPrefix("token.rsaPadding pss") == true)
        var slotted = Self.pkcs11()
        slotted.slot = "9d"
        #expect(slotted.problem == "token.slot is set for a PKCS#11 key")
        var openPGP = Self.binding("nistp256", card: 65, ephemeral: 65)
        openPGP.uri = "pkcs11:token=ci"
        #expect(openPGP.problem == "token.uri is set for a key that is not a PKCS#11 key")
    }

    @Test func pkcs11URIAndPaddingAreAuthenticated() throws {
        let vaultKey = Vault.newKey()
        let kek = SecureRandom.secret(32)
        let binding = Self.pkcs11("rsa2048", padding: "oaep-sha1")
        let slot = try VaultSlot.seal(
            vaultKey, keyEncryptionKey: kek, kind: .token, kdf: KDFParameters(algorithm: .blake2b), token: binding,
            user: "alice", created: Date())
        #expect(opened(slot, kek, "alice") != nil)
        var moved = slot
        moved.token?.uri = "pkcs11:token=other;id=%01;type=private"
        #expect(opened(moved, kek, "alice") == nil)
        var unpadded = slot
        unpadded.token?.rsaPadding = nil
        #expect(opened(unpadded, kek, "alice") == nil)
    }

    @Test func algorithmAndExponentAreAuthenticated() throws {
        let vaultKey = Vault.newKey()
        let kek = SecureRandom.secret(32)
        let binding = Self.binding("rsa2048", card: 256, ephemeral: 256, exponent: Data([1, 0, 1]))
        let slot = try VaultSlot.seal(
            vaultKey, keyEncryptionKey: kek, kind: .token, kdf: KDFParameters(algorithm: .blake2b),
            token: binding, user: "alice", created: Date(timeIntervalSince1970: 0))
        #expect(opened(slot, kek, "alice") != nil)
        var edited = slot
        edited.token?.cardPublicExponent = Data([3])
        #expect(opened(edited, kek, "alice") == nil, "exponent changed")
        edited = slot
        edited.token?.algorithm = "rsa3072"
        #expect(opened(edited, kek, "alice") == nil, "algorithm changed")
    }

    @Test func tokenKeysDependOnTheAlgorithm() throws {
        let secret = SecureRandom.secret(32)
        let salt = [UInt8](repeating: 5, count: 16)
        let one = try TokenKeys.tokenKey(
            sharedSecret: secret, binding: Self.binding("nistp256", card: 65, ephemeral: 65), salt: salt)
        let other = try TokenKeys.tokenKey(
            sharedSecret: secret, binding: Self.binding("brainpoolP256r1", card: 65, ephemeral: 65),
            salt: salt)
        #expect(one.isEqual(to: other) == false)
        // A P-521 answer is longer than a BLAKE2b key: hashed first, still a 32-byte key.
        let long = try TokenKeys.tokenKey(
            sharedSecret: SecureRandom.secret(66), binding: Self.binding("nistp521", card: 133, ephemeral: 133),
            salt: salt)
        #expect(long.count == 32)
    }

    static func pivBinding(slot: String? = "9d", application: String? = "piv", algorithm: String? = "nistp256")
        -> TokenBinding
    {
        TokenBinding(
            serial: "piv-serial:12648430", cardPublicKey: Data(repeating: 1, count: 65),
            ephemeralPublicKey: Data(repeating: 2, count: 65), algorithm: algorithm, application: application,
            slot: slot)
    }

    @Test func oldBindingJSONStaysByteForByte() throws {
        let json = Data(
            #"{"algorithm":"rsa2048","cardPublicExponent":"AQAB","cardPublicKey":"AQ==","ephemeralPublicKey":"Ag==","serial":"000612345678"}"#
                .utf8)
        let binding = try JSONDecoder().decode(TokenBinding.self, from: json)
        #expect(binding.application == nil)
        #expect(binding.slot == nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(try encoder.encode(binding) == json)
    }

    @Test func pivBindingRoundTrips() throws {
        let binding = Self.pivBinding(slot: "82")
        #expect(binding.problem == nil)
        let encoded = try JSONEncoder().encode(binding)
        let decoded = try JSONDecoder().decode(TokenBinding.self, from: encoded)
        #expect(decoded == binding)
        #expect(decoded.application == "piv")
        #expect(decoded.slot == "82")
        for slot in ["9a", "9c", "9d", "9e", "82", "95"] { #expect(Self.pivBinding(slot: slot).problem == nil) }
    }

    @Test(
        arguments: [
            (Self.pivBinding(slot: "9b"), "token.slot 9b is not a PIV key slot (9a, 9c, 9d, 9e, 82-95)"),
            (Self.pivBinding(slot: "96"), "token.slot 96 is not a PIV key slot (9a, 9c, 9d, 9e, 82-95)"),
            (Self.pivBinding(slot: "9D"), "token.slot 9D is not a PIV key slot (9a, 9c, 9d, 9e, 82-95)"),
            (Self.pivBinding(slot: nil), "token.slot is missing for a piv key"),
            (Self.pivBinding(application: "gids"), "token.application gids is unknown"),
            (Self.pivBinding(application: nil), "token.slot is set for an OpenPGP key"),
            (
                Self.pivBinding(algorithm: "brainpoolP256r1"),
                "token.algorithm brainpoolP256r1 is not one a PIV key is bound with"
            ),
        ] as [(TokenBinding, String)])
    func badPIVBindingRefused(binding: TokenBinding, problem: String) {
        #expect(binding.problem == problem)
    }

    @Test func tokenKeysDependOnApplicationAndSlot() throws {
        let secret = SecureRandom.secret(32)
        let salt = [UInt8](repeating: 5, count: 16)
        let key = { (binding: TokenBinding) throws -> String in
            base64(try TokenKeys.tokenKey(sharedSecret: secret, binding: binding, salt: salt))
        }
        let nineD = try key(Self.pivBinding(slot: "9d"))
        #expect(try key(Self.pivBinding(slot: "82")) != nineD)
        #expect(try key(Self.pivBinding(slot: nil, application: nil)) != nineD)
        #expect(try key(Self.pivBinding(slot: "9d")) == nineD)
    }

    @Test func applicationAndSlotAreAuthenticated() throws {
        let vaultKey = Vault.newKey()
        let kek = SecureRandom.secret(32)
        let slot = try VaultSlot.seal(
            vaultKey, keyEncryptionKey: kek, kind: .token, kdf: KDFParameters(algorithm: .blake2b),
            token: Self.pivBinding(), user: "alice", created: Date(timeIntervalSince1970: 0))
        #expect(opened(slot, kek, "alice") != nil)
        var edited = slot
        edited.token?.slot = "82"
        #expect(opened(edited, kek, "alice") == nil, "slot changed")
        edited = slot
        edited.token?.application = nil
        edited.token?.slot = nil
        #expect(opened(edited, kek, "alice") == nil, "application dropped")
    }
}
