import TokenpinCardCrypto
import TokenpinCore

/// A challenge for a token's key and the secret the key answers it with, computed here from the public half: an
/// ephemeral point and the ECDH x coordinate, or 32 random bytes and their encryption to the RSA key under the
/// padding its token takes. No PKCS#11 call is made, so a slot's challenge can be replaced after every verify.
package struct PKCS11Challenge: ~Copyable {
    /// What the token gets: the ephemeral point, or the RSA cryptogram.
    package let challenge: [UInt8]
    /// What the token answers with, in guarded memory.
    package let secret: SecretBytes

    /// The size of the random secret encrypted to an RSA key.
    package static let rsaSecretLength = 32

    /// A fresh challenge for `key` and its answer. Ephemeral private keys are wiped when this returns.
    ///
    /// - Throws: `.unusable` when libcrypto refuses the key (it was checked at discovery, so this is not expected).
    package static func fresh(for key: PKCS11Key) throws(PKCS11TokenError) -> PKCS11Challenge {
        do throws(CardCryptoError) {
            switch (key.algorithm, key.publicKey) {
            case (.ecdh(let curve), .ec(let point)):
                let agreement = try EllipticCurveDH.ephemeralAgreement(peerPoint: point, on: curve)
                let challenge = agreement.publicPoint
                return PKCS11Challenge(challenge: challenge, secret: agreement.takeSecret())
            case (.rsa(_, let padding), .rsa(let modulus, let exponent)):
                let secret = SecureRandom.secret(rsaSecretLength)
                let cryptogram =
                    switch padding {
                    case .oaep: try RSAKeys.encryptOAEP(secret, modulus: modulus, publicExponent: exponent)
                    case .pkcs1: try RSAKeys.encrypt(secret, modulus: modulus, publicExponent: exponent)
                    }
                return PKCS11Challenge(challenge: cryptogram, secret: secret)
            default:
                throw CardCryptoError(.invalidKey, "the key's algorithm and public key disagree")
            }
        } catch {
            throw .unusable("cannot make a challenge for \(key.displayName): \(error.detail)")
        }
    }
}

/// A PKCS#11 key opened for one operation, with its helper: everything the future `PKCS11Token: TokenApplication`
/// needs, in its terms.
///
/// `open` starts the helper, lists the tokens and picks the one key the URI selects (the only usable key without
/// one). The identity, URI, algorithm and public key are read then; `answer` logs in and has the key answer a
/// binding's challenge; `bind` makes a fresh challenge and checks the token's answer against the secret computed
/// from the public key, which is what a binding must do before it seals anything. `close` ends the helper (its
/// modules finalized, no login left behind).
package final class PKCS11TokenKey {
    /// The helper the modules run in.
    package let helper: PKCS11Helper
    /// The key, as listed (or last refreshed).
    package private(set) var key: PKCS11Key

    private init(helper: PKCS11Helper, key: PKCS11Key) {
        self.helper = helper
        self.key = key
    }

    /// Starts a helper for `module`, and selects the key `uri` names (see `PKCS11Helper.selectKey(uri:)`).
    package static func open(
        module: PKCS11ModuleSource, uri: String?, timeout: Int = PKCS11Helper.defaultTimeoutMilliseconds,
        executable: String? = nil, environment: [String]? = nil, standardError: Int32? = nil,
        counter: PKCS11CallCounter? = nil
    ) throws(PKCS11TokenError) -> PKCS11TokenKey {
        let helper = try PKCS11Helper.start(
            module: module, timeout: timeout, executable: executable, environment: environment,
            standardError: standardError, counter: counter)
        do throws(PKCS11TokenError) {
            return PKCS11TokenKey(helper: helper, key: try helper.selectKey(uri: uri))
        } catch {
            helper.stop()
            throw error
        }
    }

    /// The identity a binding records (`pkcs11-key:` and 16 hex digits of the public key's SHA-256).
    package var identity: String { key.identity }
    /// The key's URI, which a binding stores to find it again.
    package var uri: String { key.uri }
    /// The token: label, manufacturer, model, serial, flags, PIN lengths.
    package var token: PKCS11TokenInfo { key.token }
    /// The key agreement.
    package var algorithm: PKCS11KeyAlgorithm { key.algorithm }
    /// The public half a binding keeps.
    package var publicKey: PKCS11PublicKey { key.publicKey }
    /// The tries hint as listed: `finalTry` is the prompt's "last try".
    package var pinTries: PKCS11PINTries { key.token.pinTries }
    /// Whether the PIN goes on the reader's keypad (`CKF_PROTECTED_AUTHENTICATION_PATH`): no PIN is asked.
    package var usesKeypad: Bool { key.token.flags.contains(.protectedAuthenticationPath) }

    /// The tries hint read now (after a refusal); nil when the token does not answer.
    package func pinTriesNow() -> PKCS11PINTries? {
        (try? helper.status(of: key))?.pinTries
    }

    /// Logs in and has the key answer `challenge` (see `PKCS11Helper.answer`): the secret a token slot is sealed under.
    package func answer(pin: borrowing SecretBytes?, challenge: [UInt8]) throws(PKCS11TokenError) -> SecretBytes {
        try helper.answer(key, pin: pin, challenge: challenge)
    }

    /// A fresh challenge, answered by the token after login, and checked: the answer must be the secret computed
    /// from the public key, compared in constant time. The challenge (with its secret) is what a binding seals.
    ///
    /// - Throws: `.malformed` when the token answers another secret (another key under this `CKA_ID`, or a module
    ///   that lies); the answer is wiped.
    package func bind(pin: borrowing SecretBytes?) throws(PKCS11TokenError) -> PKCS11Challenge {
        let challenge = try PKCS11Challenge.fresh(for: key)
        let answer = try helper.answer(key, pin: pin, challenge: challenge.challenge)
        guard answer.isEqual(to: challenge.secret) else {
            throw .malformed(
                "\(key.displayName) answered a secret that does not match its public key; it cannot be bound")
        }
        return challenge
    }

    /// Reads the key and its public half again (no login).
    package func refresh() throws(PKCS11TokenError) {
        key = try helper.refresh(key)
    }

    /// Changes the token's user PIN (`C_SetPIN`).
    package func changePIN(current: borrowing SecretBytes, new: borrowing SecretBytes) throws(PKCS11TokenError) {
        try helper.changePIN(key, current: current, new: new)
    }

    /// Ends the helper: modules finalized, nothing logged in.
    package func close() { helper.stop() }
}
