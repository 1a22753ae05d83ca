import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore

// The card's key algorithms: what a key's secret looks like in the state file, its public key template,
// generation, import and decryption, per kind of algorithm attributes. OpenPGP card 3.4.1, §4.4.3.9-12,
// §7.2.11 and §7.2.14.
//
// Secrets in the state file: an X25519 scalar little-endian (RFC 7748), an Ed25519 seed, an ECDH/ECDSA
// scalar big-endian with the curve's coordinate length, and an RSA key as the TLV list `91 e 92 p 93 q`
// (the tags of the key import template).

extension WeierstrassCurve {
    /// The curve an OpenPGP OID names, or nil.
    init?(oid: [UInt8]) {
        switch oid {
        case [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]: self = .nistP256
        case [0x2B, 0x81, 0x04, 0x00, 0x22]: self = .nistP384
        case [0x2B, 0x81, 0x04, 0x00, 0x23]: self = .nistP521
        case [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07]: self = .brainpoolP256r1
        case [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0B]: self = .brainpoolP384r1
        case [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0D]: self = .brainpoolP512r1
        default: return nil
        }
    }

    /// The curve's OID bytes, as algorithm attributes carry them.
    var oid: [UInt8] {
        switch self {
        case .nistP256: [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        case .nistP384: [0x2B, 0x81, 0x04, 0x00, 0x22]
        case .nistP521: [0x2B, 0x81, 0x04, 0x00, 0x23]
        case .brainpoolP256r1: [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07]
        case .brainpoolP384r1: [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0B]
        case .brainpoolP512r1: [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0D]
        }
    }
}

/// Why a key operation failed, as the status word the card answers.
struct KeyFailure: Error {
    var statusWord: StatusWord
    init(_ statusWord: StatusWord) { self.statusWord = statusWord }
}

/// The three parts of a stored RSA key.
struct StoredRSAKey {
    var exponent: [UInt8]
    var prime1: [UInt8]
    var prime2: [UInt8]

    /// The `91 e 92 p 93 q` list.
    var encoded: [UInt8] {
        TLV(tag: 0x91, value: exponent).encoded + TLV(tag: 0x92, value: prime1).encoded
            + TLV(tag: 0x93, value: prime2).encoded
    }

    init(exponent: [UInt8], prime1: [UInt8], prime2: [UInt8]) {
        self.exponent = exponent
        self.prime1 = prime1
        self.prime2 = prime2
    }

    /// Parses the stored list; nil for anything else.
    init?(stored bytes: [UInt8]) {
        guard let objects = try? TLV.parseAll(bytes), objects.count == 3, objects[0].tag == 0x91,
            objects[1].tag == 0x92, objects[2].tag == 0x93
        else { return nil }
        self.init(exponent: objects[0].value, prime1: objects[1].value, prime2: objects[2].value)
    }

    /// The key for libcrypto; the primes are copied into guarded memory.
    func privateKey() throws(CardCryptoError) -> RSAKeys.PrivateKey {
        try RSAKeys.privateKey(publicExponent: exponent, prime1: guardedCopy(prime1), prime2: guardedCopy(prime2))
    }
}

extension AlgorithmAttributes.Kind {
    /// Whether `secret` is a stored secret of this kind.
    func isWellFormed(secret: [UInt8]) -> Bool {
        switch self {
        case .x25519, .ed25519: return secret.count == 32
        case .ecdh(let curve), .ecdsa(let curve): return secret.count == curve.coordinateLength
        case .rsa(let bits):
            guard let key = StoredRSAKey(stored: secret), let made = try? key.privateKey() else { return false }
            return made.modulusBits == bits
        }
    }

    /// The public key template `7F49` for a stored secret: `81 n 82 e` for RSA, `86 point` otherwise (32 raw
    /// bytes for X25519 and Ed25519, `04 || x || y` for the other curves).
    func publicKeyTemplate(secret: [UInt8]) throws -> [UInt8] {
        let children: [TLV]
        switch self {
        case .x25519: children = [TLV(tag: 0x86, value: try X25519.publicKey(for: guardedCopy(secret)))]
        case .ed25519: children = [TLV(tag: 0x86, value: try Ed25519.publicKey(forSeed: guardedCopy(secret)))]
        case .ecdh(let curve), .ecdsa(let curve):
            children = [TLV(tag: 0x86, value: try EllipticCurveDH.publicPoint(for: guardedCopy(secret), on: curve))]
        case .rsa:
            guard let stored = StoredRSAKey(stored: secret) else { throw KeyFailure(.referencedDataNotFound) }
            let key = try stored.privateKey()
            children = [TLV(tag: 0x81, value: key.modulus), TLV(tag: 0x82, value: key.publicExponent)]
        }
        return TLV(tag: 0x7F49, children: children).encoded
    }

    /// A new secret of this kind, as the state file stores it.
    func generateSecret() throws -> [UInt8] {
        switch self {
        case .x25519, .ed25519: return SecureRandom.bytes(32)
        case .ecdh(let curve), .ecdsa(let curve):
            let pair = try EllipticCurveDH.generateKeyPair(on: curve)
            return pair.privateKey.withUnsafeBytes { Array($0) }
        case .rsa(let bits):
            let key = try RSAKeys.generate(bits: bits)
            return StoredRSAKey(
                exponent: key.publicExponent, prime1: key.prime1.withUnsafeBytes { Array($0) },
                prime2: key.prime2.withUnsafeBytes { Array($0) }
            ).encoded
        }
    }

    /// The secret to store from an imported private key template's parts (tag to value): `92` the scalar
    /// for curves (big-endian; cv25519 reversed into RFC 7748 order), `91` e, `92` p and `93` q for RSA (the
    /// CRT parts `94`-`97`, when sent, are computed again from these).
    func importedSecret(_ parts: [UInt32: [UInt8]]) throws(KeyFailure) -> [UInt8] {
        switch self {
        case .x25519, .ed25519:
            guard let scalar = parts[0x92], (1...32).contains(scalar.count) else { throw KeyFailure(.incorrectData) }
            let padded = zeros(32 - scalar.count) + scalar
            if case .x25519 = self { return padded.reversed() }
            return padded
        case .ecdh(let curve), .ecdsa(let curve):
            guard let scalar = parts[0x92], (1...curve.coordinateLength).contains(scalar.count) else {
                throw KeyFailure(.incorrectData)
            }
            let padded = zeros(curve.coordinateLength - scalar.count) + scalar
            guard (try? EllipticCurveDH.publicPoint(for: guardedCopy(padded), on: curve)) != nil else {
                throw KeyFailure(.incorrectData)
            }
            return padded
        case .rsa(let bits):
            guard let exponent = parts[0x91], let prime1 = parts[0x92], let prime2 = parts[0x93] else {
                throw KeyFailure(.incorrectData)
            }
            let stored = StoredRSAKey(
                exponent: Array(exponent.drop { $0 == 0 }), prime1: Array(prime1.drop { $0 == 0 }),
                prime2: Array(prime2.drop { $0 == 0 }))
            guard let key = try? stored.privateKey(), key.modulusBits == bits else { throw KeyFailure(.incorrectData) }
            return stored.encoded
        }
    }

    /// PSO:DECIPHER with a stored secret. RSA takes `00 || cryptogram`, the cryptogram exactly as long as the
    /// modulus as cards take it (a client restores leading zeros it stripped), and answers the message; the
    /// curves take `A6 { 7F49 { 86 point } }` and answer the shared secret (the x coordinate for NIST and
    /// brainpool).
    func decipher(_ data: [UInt8], secret: [UInt8]) throws(KeyFailure) -> [UInt8] {
        switch self {
        case .rsa:
            guard data.first == 0x00, let stored = StoredRSAKey(stored: secret),
                let key = try? stored.privateKey(), data.count == 1 + (key.modulusBits + 7) / 8
            else { throw KeyFailure(.incorrectData) }
            guard let message = try? RSAKeys.decrypt(Array(data.dropFirst()), with: key) else {
                throw KeyFailure(.incorrectData)
            }
            return message.withUnsafeBytes { Array($0) }
        case .x25519, .ecdh:
            guard let template = try? TLV.parseOne(data), template.tag == 0xA6,
                let publicKey = try? TLV.parseOne(template.value), publicKey.tag == 0x7F49,
                let point = try? TLV.parseOne(publicKey.value), point.tag == 0x86
            else { throw KeyFailure(.incorrectData) }
            var peer = point.value
            if case .ecdh(let curve) = self {
                guard
                    let shared = try? EllipticCurveDH.sharedSecret(
                        privateKey: guardedCopy(secret), peerPoint: peer,
                        on: curve)
                else { throw KeyFailure(.incorrectData) }
                return shared.withUnsafeBytes { Array($0) }
            }
            if peer.count == 33 && peer[0] == 0x40 { peer.removeFirst() }
            guard peer.count == 32,
                let shared = try? X25519.sharedSecret(secretKey: guardedCopy(secret), peerPublicKey: peer)
            else { throw KeyFailure(.incorrectData) }
            return shared.withUnsafeBytes { Array($0) }
        case .ed25519, .ecdsa:
            throw KeyFailure(.functionNotSupported)
        }
    }

    /// A signature with a stored secret: Ed25519 over the data, RSA PKCS#1 v1.5 over the DigestInfo the host
    /// sends, ECDSA over the digest as `r || s`. Decryption-only algorithms: `6A81`; bad input: `6A80`.
    func sign(_ data: [UInt8], secret: [UInt8]) throws(KeyFailure) -> [UInt8] {
        switch self {
        case .ed25519:
            guard let signature = try? Ed25519.sign(data, seed: guardedCopy(secret)) else {
                throw KeyFailure(.executionError)
            }
            return signature
        case .rsa:
            guard let stored = StoredRSAKey(stored: secret), let key = try? stored.privateKey(),
                let signature = try? CardSignatures.rsaSign(data, with: key)
            else { throw KeyFailure(.incorrectData) }
            return signature
        case .ecdsa(let curve):
            guard let signature = try? CardSignatures.ecdsaSign(data, privateKey: guardedCopy(secret), on: curve) else {
                throw KeyFailure(.incorrectData)
            }
            return signature
        case .x25519, .ecdh:
            throw KeyFailure(.functionNotSupported)
        }
    }
}
