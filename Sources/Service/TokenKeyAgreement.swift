import FoundationEssentials
import TokenpinCardCrypto
internal import TokenpinCore
import TokenpinOpenPGP

/// The decryption-key algorithms a token binds to, and for each how a secret is agreed with the card.
///
/// For every algorithm the slot keeps a *challenge* the card answers with PSO:DECIPHER after its PIN was
/// verified, and tokenpin computes the same answer locally from the card's public key when it makes a new
/// challenge, so the challenge can be replaced after every successful verification without an APDU:
/// - cv25519: the challenge is an ephemeral X25519 public key, the answer X25519(card, ephemeral);
/// - NIST and brainpool ECDH: an ephemeral uncompressed point, the answer the x coordinate of the product;
/// - RSA: 32 random bytes encrypted to the card's key with PKCS#1 v1.5, the answer those bytes.
enum TokenKeyAlgorithm: Equatable, CustomStringConvertible {
    case cv25519
    case ecdh(WeierstrassCurve)
    case rsa(bits: Int)

    /// Every algorithm, in the order messages list them.
    static let all: [TokenKeyAlgorithm] =
        [.cv25519] + RSAKeys.supportedModulusBits.map { .rsa(bits: $0) } + WeierstrassCurve.allCases.map { .ecdh($0) }

    /// The names of every supported algorithm, for messages.
    static var supportedList: String { all.map(\.description).joined(separator: ", ") }

    /// The algorithm of a decryption key with these attributes (`C2`), or nil when tokenpin cannot bind to it.
    init?(attributes: AlgorithmAttributes) {
        switch attributes {
        case .ecdh(.curve25519, _): self = .cv25519
        case .ecdh(let curve, _):
            guard let known = WeierstrassCurve(curve) else { return nil }
            self = .ecdh(known)
        case .rsa(let bits, _, _):
            guard RSAKeys.supportedModulusBits.contains(bits) else { return nil }
            self = .rsa(bits: bits)
        default:
            return nil
        }
    }

    /// The algorithm a binding names; nil names cv25519 (records from before the other algorithms).
    init?(bindingName: String?) {
        guard let bindingName else {
            self = .cv25519
            return
        }
        guard let found = Self.all.first(where: { $0.bindingName == bindingName }) else { return nil }
        self = found
    }

    /// The name a binding records; nil for cv25519, so its records stay as they were.
    var bindingName: String? {
        if case .cv25519 = self { return nil }
        return description
    }

    var description: String {
        switch self {
        case .cv25519: "cv25519"
        case .ecdh(let curve): curve.name
        case .rsa(let bits): "rsa\(bits)"
        }
    }

    /// The card's OpenPGP public key as a binding keeps it (the key or modulus, and an RSA exponent), judged.
    func bindingKey(from publicKey: CardPublicKey) throws(TokenKeyError) -> (key: [UInt8], exponent: [UInt8]?) {
        switch (self, publicKey) {
        case (.cv25519, _):
            guard let key = publicKey.curve25519 else {
                throw TokenKeyError("the card did not return a cv25519 public key")
            }
            return try judge(key: key, exponent: nil)
        case (.ecdh, .ecc(let point)):
            return try judge(key: point, exponent: nil)
        case (.rsa, .rsa(let modulus, let exponent)):
            return try judge(key: modulus, exponent: exponent)
        default:
            throw TokenKeyError("the card's public key does not match its \(self) attributes")
        }
    }

    /// Judges a card's public key for this algorithm, whatever application it came from (OpenPGP, PIV, PKCS#11):
    /// the key and RSA exponent a binding keeps, or why tokenpin cannot use it. One place decides, when the card
    /// is read, so `readers` and `toggle token on` say it before anything is asked.
    ///
    /// - ECDH: an uncompressed point on the curve, and not ±k·G for k up to 1024 (the generator is private key 1:
    ///   anyone computes the answer to any challenge from the challenge alone).
    /// - cv25519: 32 bytes, not of small order (no secret could be agreed), not k·B for k up to 1024 or the key of
    ///   the all-zero secret.
    /// - RSA: the modulus as long as the algorithm says (2048, 3072 or 4096 bits, top bit set), odd; an odd
    ///   exponent of 3 to 64 bits.
    func judge(key: [UInt8], exponent: [UInt8]?) throws(TokenKeyError) -> (key: [UInt8], exponent: [UInt8]?) {
        switch self {
        case .cv25519:
            guard key.count == X25519.keyLength else {
                throw TokenKeyError("the card's cv25519 key has \(key.count) bytes, not 32")
            }
            if X25519.isSmallOrder(key) {
                throw TokenKeyError("the card's cv25519 key is a point of small order: no secret can be agreed with it")
            }
            if let logarithm = X25519.knownLogarithm(of: key) {
                throw TokenKeyError(
                    "the card's cv25519 key is \(logarithm)·B, a known private key: anyone could answer for it")
            }
            return (key, nil)
        case .ecdh(let curve):
            let multiple: Int?
            do {
                multiple = try EllipticCurveDH.knownLogarithm(of: key, on: curve)
            } catch {
                throw TokenKeyError("the card's \(self) public key is not a point of the curve (\(error.detail))")
            }
            if let multiple {
                throw TokenKeyError(
                    "the card's \(self) key is ±\(multiple)·G, a known private key: anyone could answer for it")
            }
            return (key, nil)
        case .rsa(let bits):
            let trimmed = Array(key.drop { $0 == 0 })
            guard trimmed.count == bits / 8, trimmed[0] & 0x80 != 0 else {
                throw TokenKeyError(
                    "the card's RSA key has a \(Self.bitCount(trimmed))-bit modulus, not the \(bits) bits of its algorithm"
                )
            }
            let e = Array((exponent ?? []).drop { $0 == 0 })
            guard (1...8).contains(e.count) else {
                throw TokenKeyError("the card's RSA exponent has \(e.count) bytes; tokenpin takes 1 to 8")
            }
            do {
                try RSAKeys.validatePublicKey(modulus: trimmed, publicExponent: e)
            } catch {
                throw TokenKeyError("the card's RSA key cannot be used: \(error.detail)")
            }
            return (trimmed, e)
        }
    }

    /// A fresh challenge for the card key in `binding` and the answer the card will give to it, computed here.
    /// No APDU is sent; ephemeral private keys are wiped when this returns. A key the arithmetic refuses (a record
    /// naming a key no card binding could have) is a `TokenKeyError`, as at binding.
    func freshChallenge(for binding: TokenBinding) throws(TokenKeyError) -> TokenChallenge {
        do {
            return try agreement(with: binding)
        } catch let error as TokenKeyError {
            throw error
        } catch let error as CardCryptoError {
            throw TokenKeyError("the bound \(self) key cannot be used: \(error.detail)")
        } catch {
            throw TokenKeyError("the bound \(self) key cannot be used: \(error)")
        }
    }

    private func agreement(with binding: TokenBinding) throws -> TokenChallenge {
        let cardKey = [UInt8](binding.cardPublicKey)
        switch self {
        case .cv25519:
            let ephemeral = try X25519.generateKeyPair()
            let secret = try X25519.sharedSecret(secretKey: ephemeral.secretKey, peerPublicKey: cardKey)
            return TokenChallenge(challenge: ephemeral.publicKey, secret: secret)
        case .ecdh(let curve):
            let agreement = try EllipticCurveDH.ephemeralAgreement(peerPoint: cardKey, on: curve)
            let challenge = agreement.publicPoint
            return TokenChallenge(challenge: challenge, secret: agreement.takeSecret())
        case .rsa:
            guard let exponent = binding.cardPublicExponent else {
                throw TokenKeyError("RSA binding without an exponent")
            }
            let secret = SecureRandom.secret(Self.rsaSecretLength)
            let cryptogram = try RSAKeys.encrypt(secret, modulus: cardKey, publicExponent: [UInt8](exponent))
            return TokenChallenge(challenge: cryptogram, secret: secret)
        }
    }

    /// Has the card answer `challenge` (PSO:DECIPHER); PW1 must be verified.
    func cardAnswer(_ session: OpenPGPSession, challenge: [UInt8]) throws(OpenPGPError) -> SecretBytes {
        switch self {
        case .cv25519: try session.decipher(ephemeralPublicKey: challenge)
        case .ecdh: try session.decipher(ecdhPoint: challenge)
        case .rsa: try session.decipher(rsaCryptogram: challenge)
        }
    }

    /// The significant bits of a big-endian number.
    static func bitCount(_ bytes: [UInt8]) -> Int {
        guard let first = bytes.firstIndex(where: { $0 != 0 }) else { return 0 }
        return (bytes.count - first - 1) * 8 + (8 - bytes[first].leadingZeroBitCount)
    }

    /// The size of the random secret encrypted to an RSA card key.
    static let rsaSecretLength = 32
}

/// A challenge for the card and the secret it answers.
struct TokenChallenge: ~Copyable {
    let challenge: [UInt8]
    let secret: SecretBytes
}

/// A card key tokenpin cannot use as it is.
struct TokenKeyError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension WeierstrassCurve {
    /// The curve an OpenPGP `Curve` (OID) names, or nil.
    init?(_ curve: Curve) {
        switch curve {
        case .nistP256: self = .nistP256
        case .nistP384: self = .nistP384
        case .nistP521: self = .nistP521
        case .brainpoolP256r1: self = .brainpoolP256r1
        case .brainpoolP384r1: self = .brainpoolP384r1
        case .brainpoolP512r1: self = .brainpoolP512r1
        default: return nil
        }
    }

    /// The name OpenPGP tools use: `nistp256`, `brainpoolP256r1`.
    var name: String {
        switch self {
        case .nistP256: "nistp256"
        case .nistP384: "nistp384"
        case .nistP521: "nistp521"
        case .brainpoolP256r1: "brainpoolP256r1"
        case .brainpoolP384r1: "brainpoolP384r1"
        case .brainpoolP512r1: "brainpoolP512r1"
        }
    }
}
