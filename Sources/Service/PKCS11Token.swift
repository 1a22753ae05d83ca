import FoundationEssentials
internal import TokenpinAPDU
import TokenpinCardCrypto
internal import TokenpinCore
import TokenpinPKCS11

/// A key on a PKCS#11 token as a token application: `C_Login` with the card PIN, then `C_DeriveKey`
/// (`CKM_ECDH1_DERIVE`) or `C_Decrypt` answers the binding's challenge, all in the `tokenpin-pkcs11` helper.
///
/// The "reader" of a PKCS#11 token is its key's RFC 7512 URI: that is what lists show, what the binding stores and
/// what opens it again. The identity is the hash of the public key (`pkcs11-key:…`), so a token re-initialized with
/// another key under the same URI is another token. PKCS#11 gives no try count, only flags: `pinTriesLeft` is 0
/// when locked, 1 on the final try, and `PKCS11Token.triesUntold` otherwise.
final class PKCS11Token: TokenApplication {
    let tokenKey: PKCS11TokenKey

    /// The tries a PKCS#11 token does not tell (no `CKF_USER_PIN_FINAL_TRY` or `LOCKED`): prompts and messages say
    /// no number for it.
    static let triesUntold = cardTriesUntold

    private init(tokenKey: PKCS11TokenKey) {
        self.tokenKey = tokenKey
    }

    /// Starts a helper with the modules of `access` and selects the key `uri` names; without a URI, the only token
    /// key that agrees a secret (more than one is refused with their URIs, as systemd does).
    static func open(uri: String?, access: PKCS11Access) throws(PKCS11TokenError) -> PKCS11Token {
        PKCS11Token(
            tokenKey: try PKCS11TokenKey.open(
                module: access.source, uri: uri, timeout: access.timeoutMilliseconds, executable: access.helper,
                environment: access.environment, counter: access.counter))
    }

    var kind: TokenApplicationKind { .pkcs11 }

    /// No PC/SC event names a key's URI: the daemon watches its token through its module (`PKCS11PresenceProbe`).
    var removalWatch: TokenRemovalWatch { .ownWatch }

    var key: PKCS11Key { tokenKey.key }

    /// The key's URI.
    var reader: String { tokenKey.uri }

    var identity: String { tokenKey.identity }

    /// `nistp256 key 'tp' (id 01) on SoftHSM v2 token 'ci' (serial 3b4f…)`.
    var label: String { key.displayName }

    /// `SoftHSM v2 token 'ci' (serial 3b4f…)`.
    var promptName: String { key.token.displayName }

    /// Whether the PIN goes on the reader's keypad: no PIN is asked.
    var usesKeypad: Bool { tokenKey.usesKeypad }

    /// What the keypad the PIN goes on is called: the slot's description (the reader's name for OpenSC), else the
    /// token's name.
    var keypadName: String {
        let slot = key.token.slotDescription
        return slot.isEmpty ? promptName : slot
    }

    var pinTriesLeft: Int { Self.tries(tokenKey.pinTries) }

    var pinMaxLength: Int { key.token.pinLength?.upperBound ?? 64 }

    /// Only keys that agree a secret are listed, so a listed key is usable unless its arithmetic says otherwise.
    var unusableReason: String? {
        do {
            _ = try bindableKey(slot: nil)
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// `nistp256 (id 01)`.
    var keyDescription: String? { "\(key.algorithm) (id \(key.idHex))" }

    var keyOperationName: String {
        switch key.algorithm {
        case .ecdh: "C_DeriveKey"
        case .rsa: "C_Decrypt"
        }
    }

    /// The service's algorithm for the key.
    var algorithm: TokenKeyAlgorithm {
        switch key.algorithm {
        case .ecdh(let curve): .ecdh(curve)
        case .rsa(let bits, _): .rsa(bits: bits)
        }
    }

    /// The key as the token listed it, judged as every application's keys are. A PKCS#11 token has no slots.
    func bindableKey(slot: String?) throws(TokenCardError) -> TokenCardKey {
        guard slot == nil else {
            throw .unusable("a PKCS#11 key is chosen by its URI (--token-uri), not by a slot (--slot is for PIV)")
        }
        if let problem = Self.uriProblem(key.uri) { throw .unusable(problem) }
        let raw: (key: [UInt8], exponent: [UInt8]?) =
            switch key.publicKey {
            case .ec(let point): (point, nil)
            case .rsa(let modulus, let exponent): (modulus, exponent)
            }
        do {
            let checked = try algorithm.judge(key: raw.key, exponent: raw.exponent)
            return TokenCardKey(slot: nil, algorithm: algorithm, publicKey: checked.key, exponent: checked.exponent)
        } catch {
            throw .unusable(error.description)
        }
    }

    /// Why a record could not keep `uri` as the URI a binding finds its key by (a record that holds one is unreadable),
    /// or nil: a `pkcs11:` URI of 8 to `TokenBinding.maximumURILength` bytes. A module's long key id (each byte
    /// written `%XX`) can pass the limit; p11-kit's fallback when it cannot format a URI, a bare `pkcs11:`, names no key.
    static func uriProblem(_ uri: String) -> String? {
        let length = uri.utf8.count
        guard uri.hasPrefix("pkcs11:"), (8...TokenBinding.maximumURILength).contains(length) else {
            return "this key's PKCS#11 URI is \(length) bytes (`\(uri.prefix(60))`); a record keeps a pkcs11: URI of "
                + "8 to \(TokenBinding.maximumURILength) bytes"
        }
        return nil
    }

    /// What a binding of this key records beside the common fields: the URI and the RSA padding.
    func describe(_ binding: inout TokenBinding) {
        binding.uri = key.uri
        if case .rsa(_, .oaep) = key.algorithm { binding.rsaPadding = PKCS11RSAPadding.oaep.rawValue }
    }

    /// `C_Login` (no PIN on a keypad token) and the key's answer to the binding's challenge, in the helper.
    func answer(pin: borrowing SecretBytes, binding: TokenBinding, algorithm: TokenKeyAlgorithm)
        throws(TokenCardError) -> SecretBytes
    {
        var bound = key
        if case .rsa(let bits, _) = bound.algorithm {
            // The challenge was made with the padding the binding recorded, whatever the token lists today.
            bound.algorithm = .rsa(bits: bits, padding: binding.rsaPadding == nil ? .pkcs1 : .oaep)
        }
        do {
            let keypad: SecretBytes? = nil
            return try tokenKey.helper.answer(
                bound, pin: usesKeypad ? keypad : pin.duplicate(), challenge: [UInt8](binding.ephemeralPublicKey))
        } catch {
            throw Self.cardError(error)
        }
    }

    /// A PKCS#11 token's PIN is checked only by the login of an operation; tokenpin generates no keys on it.
    func checkPIN(_ pin: borrowing SecretBytes) throws(TokenCardError) {
        throw .unusable(Self.noGeneration)
    }

    func generateKey(slot: String?, assumeYes: Bool, adminKeypad: CardKeypad?, _ interaction: some Interaction) throws
        -> TokenCardKey
    {
        throw TokenCardError.unusable(Self.noGeneration)
    }

    static let noGeneration =
        "tokenpin does not generate keys on a PKCS#11 token; make one with the token's own tools "
        + "(`pkcs11-tool --login --keypairgen --key-type EC:prime256v1 --usage-derive`)"

    /// `C_SetPIN` (on the keypad for a token with a protected authentication path).
    func changePIN(current: borrowing SecretBytes, new: borrowing SecretBytes) throws(TokenCardError) {
        do {
            try tokenKey.changePIN(current: current, new: new)
        } catch {
            throw Self.cardError(error)
        }
    }

    /// None: unlocking a PKCS#11 token's user PIN takes its SO PIN, an administrator's credential, and its own tools.
    var unblockCredentials: [UnblockCredential] { [] }

    func triesLeft(_ credential: UnblockCredential) -> Int? { nil }

    func unblock(with credential: UnblockCredential, secret: borrowing SecretBytes, newPIN: borrowing SecretBytes)
        throws(TokenCardError)
    {
        throw .unusable(Self.unblockAdvice)
    }

    /// What `token unblock` says for a PKCS#11 token.
    static let unblockAdvice =
        "a PKCS#11 token's PIN is unlocked with its SO PIN, an administrator's credential, by the token's own "
        + "tools (`pkcs11-tool --login --login-type so --init-pin`, or its vendor's); tokenpin does not ask for it"

    func pinTriesNow() -> Int? { tokenKey.pinTriesNow().map(Self.tries) }

    func close() { tokenKey.close() }

    /// The service's tries for a token's coarse hint.
    static func tries(_ hint: PKCS11PINTries) -> Int {
        switch hint {
        case .locked: 0
        case .finalTry: 1
        case .low, .unknown: triesUntold
        }
    }

    /// A PKCS#11 error in the token's terms: the helper or module gone (or hung) is a transport failure, after which
    /// the service may fall back to the PIN.
    static func cardError(_ error: PKCS11TokenError) -> TokenCardError {
        switch error {
        case .wrongPIN(let hint): .wrongPIN(triesLeft: tries(hint))
        case .pinLocked: .blocked
        case .noToken, .ambiguous: .applicationNotFound
        case .unusable(let why): .unusable(why)
        case .module(let code, "C_Login", _) where code == .functionCanceled || code == .cancel:
            // Cancelled on a keypad (a protected authentication path): the token saw no PIN.
            .keypadRefused(.cancelled)
        case .malformed: .malformed(error.description)
        default: error.isTransport ? transport(error) : .refused(error.description)
        }
    }

    /// The service's transport failure for a token, its module or the helper gone: the one place a PKCS#11 error
    /// becomes `TokenCardError.transport`.
    static func transport(_ error: PKCS11TokenError) -> TokenCardError {
        .transport(CardTransportError(error))
    }

    /// A fresh challenge for a PKCS#11 RSA binding whose token takes OAEP, or nil for every other binding (the
    /// service's `TokenKeyAlgorithm.freshChallenge` makes those).
    static func freshOAEPChallenge(for binding: TokenBinding) throws -> TokenChallenge? {
        guard binding.applicationKind == .pkcs11, binding.rsaPadding != nil else { return nil }
        guard let exponent = binding.cardPublicExponent else { throw TokenKeyError("RSA binding without an exponent") }
        let secret = SecureRandom.secret(PKCS11Challenge.rsaSecretLength)
        do {
            let cryptogram = try RSAKeys.encryptOAEP(
                secret, modulus: [UInt8](binding.cardPublicKey), publicExponent: [UInt8](exponent))
            return TokenChallenge(challenge: cryptogram, secret: secret)
        } catch {
            throw TokenKeyError("the bound RSA key cannot be used: \(error.detail)")
        }
    }
}

/// The tries-left value of a card that does not tell them (a PKCS#11 token without the final-try or locked flag):
/// prompts and messages show no number for it.
package let cardTriesUntold = 255

extension CardTransportError {
    /// A PKCS#11 token, its module or the helper went away or did not answer, in the transport's terms.
    init(_ error: PKCS11TokenError) {
        let kind: Kind =
            switch error {
            case .notAnswering: .timeout
            case .tokenChanged: .cardRemoved
            case .module(let code, _, _) where code.isTokenGone: .cardRemoved
            default: .other
            }
        self.init(kind, error.description)
    }
}
