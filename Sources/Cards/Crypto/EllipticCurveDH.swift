internal import COpenSSL
package import TokenpinCore

/// A short-Weierstrass curve OpenPGP cards offer for ECDH, with points in the uncompressed form
/// `04 || x || y` the cards use (OpenPGP card 3.4.1, §7.2.11 and §7.2.14).
package enum WeierstrassCurve: String, CaseIterable, Sendable, Hashable {
    /// NIST P-256 (secp256r1).
    case nistP256
    /// NIST P-384 (secp384r1).
    case nistP384
    /// NIST P-521 (secp521r1).
    case nistP521
    /// brainpoolP256r1 (RFC 5639).
    case brainpoolP256r1
    /// brainpoolP384r1 (RFC 5639).
    case brainpoolP384r1
    /// brainpoolP512r1 (RFC 5639).
    case brainpoolP512r1

    /// The size of a coordinate, of a private scalar and of the shared secret (the x coordinate), in bytes.
    package var coordinateLength: Int {
        switch self {
        case .nistP256, .brainpoolP256r1: 32
        case .nistP384, .brainpoolP384r1: 48
        case .nistP521: 66
        case .brainpoolP512r1: 64
        }
    }

    /// The size of an uncompressed point: `04`, then both coordinates.
    package var pointLength: Int { 1 + 2 * coordinateLength }

    /// libcrypto's numeric identifier of the curve.
    var nid: Int32 {
        switch self {
        case .nistP256: NID_X9_62_prime256v1
        case .nistP384: NID_secp384r1
        case .nistP521: NID_secp521r1
        case .brainpoolP256r1: NID_brainpoolP256r1
        case .brainpoolP384r1: NID_brainpoolP384r1
        case .brainpoolP512r1: NID_brainpoolP512r1
        }
    }

    /// The group name libcrypto knows the curve by.
    var groupName: String {
        switch self {
        case .nistP256: "P-256"
        case .nistP384: "P-384"
        case .nistP521: "P-521"
        case .brainpoolP256r1: "brainpoolP256r1"
        case .brainpoolP384r1: "brainpoolP384r1"
        case .brainpoolP512r1: "brainpoolP512r1"
        }
    }

    /// The prefixes of the x coordinates of G, 2G, ... `EllipticCurveDH.smallMultipleBound`·G, entry i for k = i + 1
    /// (scripts/known-multiples wrote them).
    var multiplePrefixes: [UInt64] {
        switch self {
        case .nistP256: Self.nistP256MultiplePrefixes
        case .nistP384: Self.nistP384MultiplePrefixes
        case .nistP521: Self.nistP521MultiplePrefixes
        case .brainpoolP256r1: Self.brainpoolP256r1MultiplePrefixes
        case .brainpoolP384r1: Self.brainpoolP384r1MultiplePrefixes
        case .brainpoolP512r1: Self.brainpoolP512r1MultiplePrefixes
        }
    }
}

/// Elliptic-curve Diffie-Hellman on the NIST and brainpool curves, through libcrypto's EVP API.
///
/// The shared secret is the x coordinate of the product, `coordinateLength` bytes with leading zeros, as an
/// OpenPGP card answers PSO:DECIPHER. Private scalars are big-endian, `coordinateLength` bytes, in guarded
/// memory; every libcrypto copy is cleared when freed.
package enum EllipticCurveDH {
    /// A key pair: the uncompressed public point and the private scalar.
    package struct KeyPair: ~Copyable, Sendable {
        /// `04 || x || y`.
        package let publicPoint: [UInt8]
        /// The private scalar, big-endian, `coordinateLength` bytes of guarded memory.
        package let privateKey: SecretBytes
    }

    /// A new key pair from libcrypto's generator.
    ///
    /// The corresponding C functions are `EVP_PKEY_keygen_init`, `EVP_PKEY_CTX_set_group_name` and
    /// `EVP_PKEY_generate`.
    package static func generateKeyPair(on curve: WeierstrassCurve) throws(CardCryptoError) -> KeyPair {
        let context = try PKeyContext(algorithm: "EC")
        guard EVP_PKEY_keygen_init(context.pointer) == 1,
            EVP_PKEY_CTX_set_group_name(context.pointer, curve.groupName) == 1
        else { throw libcryptoError("EC key generation setup") }
        let key = try context.generate()
        let scalar = try key.number("priv", secret: true)
        return KeyPair(
            publicPoint: try uncompressedPoint(of: key, curve: curve),
            privateKey: try scalar.secretBytes(length: curve.coordinateLength))
    }

    /// The public point of a private scalar.
    ///
    /// Throws `.invalidLength` for a scalar that is not `coordinateLength` bytes and `.invalidKey` for one
    /// outside `1..<order`.
    package static func publicPoint(
        for privateKey: borrowing SecretBytes,
        on curve: WeierstrassCurve
    ) throws(CardCryptoError) -> [UInt8] {
        let key = try privateKeyObject(privateKey, curve: curve)
        return try uncompressedPoint(of: key, curve: curve)
    }

    /// Checks that `point` is an uncompressed point on `curve`.
    ///
    /// Throws `.invalidLength` for the wrong size and `.pointNotOnCurve` for anything else that is not a point
    /// of the curve (another prefix, coordinates off the curve, the point at infinity).
    package static func validate(point: [UInt8], on curve: WeierstrassCurve) throws(CardCryptoError) {
        _ = try publicKeyObject(point, curve: curve)
    }

    /// The largest multiple of the generator `knownLogarithm(of:on:)` looks for.
    package static let smallMultipleBound = 1024

    /// The discrete logarithm of `point` when anyone can know it: k when the point is k·G or -k·G with
    /// 1 ≤ k ≤ `smallMultipleBound` (the generator itself is private key 1), else nil.
    ///
    /// An agreement with such a key is computed by anyone from the challenge alone (and the x coordinate, the
    /// secret, is the same for -k·G). Throws for a point that is not on the curve. The x coordinate's first 8 bytes
    /// are looked up in the curve's constant table (`multiplePrefixes`, written by scripts/known-multiples); a
    /// prefix found is confirmed by libcrypto (k·G by `EC_POINT_mul`, the whole x coordinate compared: on the
    /// curve, a point with k·G's x is k·G or -k·G). A few microseconds beside the point's validation.
    package static func knownLogarithm(of point: [UInt8], on curve: WeierstrassCurve) throws(CardCryptoError) -> Int? {
        try validate(point: point, on: curve)
        return try knownMultiple(of: point, on: curve, among: curve.multiplePrefixes)
    }

    /// The k of the first entry of `prefixes` (entry i is for k = i + 1) that equals the prefix of the validated
    /// `point`'s x coordinate and whose k·G has the same x; nil when none has. A prefix shared with a point that is
    /// not ±k·G is passed over, and the scan goes on. `prefixes` is a parameter for the tests.
    static func knownMultiple(
        of point: [UInt8], on curve: WeierstrassCurve, among prefixes: [UInt64]
    ) throws(CardCryptoError) -> Int? {
        let x = point[1...curve.coordinateLength]
        let prefix = x.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
        for (index, candidate) in prefixes.enumerated() where candidate == prefix {
            let k = index + 1
            let scalar = try BigNumber(withUnsafeBytes(of: UInt64(k).bigEndian) { Array($0) })
            let multiple = try multiplyGenerator(by: scalar, curve: curve)
            if multiple[1...curve.coordinateLength] == x { return k }
        }
        return nil
    }

    /// -P for the uncompressed point P (the same x coordinate, y negated), for tests of `knownLogarithm`.
    ///
    /// The corresponding C functions are `EC_POINT_oct2point`, `EC_POINT_invert` and `EC_POINT_point2oct`.
    static func negated(_ point: [UInt8], on curve: WeierstrassCurve) throws(CardCryptoError) -> [UInt8] {
        try validate(point: point, on: curve)
        guard let group = EC_GROUP_new_by_curve_name(curve.nid) else { throw libcryptoError("EC_GROUP_new") }
        defer { EC_GROUP_free(group) }
        let context = try BigNumberContext()
        guard let value = EC_POINT_new(group) else { throw libcryptoError("EC_POINT_new") }
        defer { EC_POINT_free(value) }
        var out = [UInt8](repeating: 0, count: curve.pointLength)
        guard EC_POINT_oct2point(group, value, point, point.count, context.pointer) == 1,
            EC_POINT_invert(group, value, context.pointer) == 1,
            EC_POINT_point2oct(group, value, POINT_CONVERSION_UNCOMPRESSED, &out, out.count, context.pointer)
                == curve.pointLength
        else { throw libcryptoError("EC_POINT_invert") }
        return out
    }

    /// The shared secret of `privateKey` and `peerPoint`: the x coordinate of their product, in guarded memory.
    ///
    /// The corresponding C functions are `EVP_PKEY_derive_init`, `EVP_PKEY_derive_set_peer` (which checks
    /// the peer's point) and `EVP_PKEY_derive`. Throws `.invalidLength` or `.pointNotOnCurve` for a bad peer
    /// point and `.invalidKey` for a bad scalar.
    package static func sharedSecret(
        privateKey: borrowing SecretBytes, peerPoint: [UInt8],
        on curve: WeierstrassCurve
    ) throws(CardCryptoError) -> SecretBytes {
        let peer = try publicKeyObject(peerPoint, curve: curve)
        let key = try privateKeyObject(privateKey, curve: curve)
        return try derive(key, peer, curve: curve)
    }

    /// A fresh key agreement with `peerPoint`: a new ephemeral key pair's public point and the shared secret.
    package struct EphemeralAgreement: ~Copyable, Sendable {
        /// The ephemeral public point, `04 || x || y`.
        package let publicPoint: [UInt8]
        /// The shared secret (the x coordinate), `coordinateLength` bytes of guarded memory.
        package let secret: SecretBytes

        /// The shared secret, moved out (the agreement ends).
        package consuming func takeSecret() -> SecretBytes { secret }
    }

    /// A new ephemeral key pair on `curve` and its shared secret with `peerPoint`, the private key never leaving
    /// libcrypto (it is cleared when freed): what the owner of `peerPoint` will compute from the public point.
    ///
    /// The same as `generateKeyPair` then `sharedSecret`, without taking the scalar out and building the key
    /// again (a second multiplication by the generator, a group built and the key pair checked): a third of
    /// the work. Throws `.invalidLength` or `.pointNotOnCurve` for a bad peer point.
    /// The corresponding C functions are `EVP_PKEY_generate` and `EVP_PKEY_derive`.
    package static func ephemeralAgreement(
        peerPoint: [UInt8], on curve: WeierstrassCurve
    ) throws(CardCryptoError) -> EphemeralAgreement {
        let peer = try publicKeyObject(peerPoint, curve: curve)
        let context = try PKeyContext(algorithm: "EC")
        guard EVP_PKEY_keygen_init(context.pointer) == 1,
            EVP_PKEY_CTX_set_group_name(context.pointer, curve.groupName) == 1
        else { throw libcryptoError("EC key generation setup") }
        let key = try context.generate()
        return EphemeralAgreement(
            publicPoint: try uncompressedPoint(of: key, curve: curve), secret: try derive(key, peer, curve: curve))
    }

    /// The x coordinate of `key`'s scalar times `peer`'s point, in guarded memory.
    private static func derive(
        _ key: borrowing PKey, _ peer: borrowing PKey, curve: WeierstrassCurve
    ) throws(CardCryptoError) -> SecretBytes {
        let context = try PKeyContext(key: key)
        guard EVP_PKEY_derive_init(context.pointer) == 1 else { throw libcryptoError("EVP_PKEY_derive_init") }
        guard EVP_PKEY_derive_set_peer(context.pointer, peer.pointer) == 1 else {
            ERR_clear_error()
            throw CardCryptoError(.pointNotOnCurve, "the peer point is not a usable point of \(curve.rawValue)")
        }
        var length = 0
        guard EVP_PKEY_derive(context.pointer, nil, &length) == 1, length == curve.coordinateLength else {
            throw libcryptoError("EVP_PKEY_derive")
        }
        let secret = SecretBytes(count: curve.coordinateLength)
        let status = secret.withUnsafeMutableBytes { out in
            EVP_PKEY_derive(context.pointer, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        }
        guard status == 1, length == curve.coordinateLength else { throw libcryptoError("EVP_PKEY_derive") }
        return secret
    }

    // MARK: Keys as libcrypto objects

    /// A public key object for an uncompressed point, checked to lie on the curve.
    static func publicKeyObject(_ point: [UInt8], curve: WeierstrassCurve) throws(CardCryptoError) -> PKey {
        guard point.count == curve.pointLength else {
            throw CardCryptoError(
                .invalidLength, "a \(curve.rawValue) point has \(curve.pointLength) bytes, not \(point.count)")
        }
        guard point[0] == 0x04 else {
            throw CardCryptoError(.pointNotOnCurve, "a \(curve.rawValue) point must be uncompressed (04 || x || y)")
        }
        let parameters = try ParameterList { builder throws(CardCryptoError) in
            try builder.push("group", string: curve.groupName)
            try builder.push("pub", octets: point)
        }
        do {
            return try PKey(algorithm: "EC", selection: KeySelection.publicKey, parameters: parameters)
        } catch {
            throw CardCryptoError(.pointNotOnCurve, "the point is not on \(curve.rawValue)")
        }
    }

    /// A key-pair object for a private scalar, with its public point computed from it.
    static func privateKeyObject(
        _ privateKey: borrowing SecretBytes,
        curve: WeierstrassCurve
    ) throws(CardCryptoError) -> PKey {
        guard privateKey.count == curve.coordinateLength else {
            throw CardCryptoError(
                .invalidLength,
                "a \(curve.rawValue) private key has \(curve.coordinateLength) bytes, not \(privateKey.count)")
        }
        let scalar = try BigNumber(secret: privateKey)
        let point = try multiplyGenerator(by: scalar, curve: curve)
        let parameters = try ParameterList { builder throws(CardCryptoError) in
            try builder.push("group", string: curve.groupName)
            try builder.push("priv", number: scalar)
            try builder.push("pub", octets: point)
        }
        return try PKey(algorithm: "EC", selection: KeySelection.keyPair, parameters: parameters)
    }

    /// `scalar * G`, uncompressed; `.invalidKey` unless `1 <= scalar < order`.
    ///
    /// The corresponding C functions are `EC_GROUP_new_by_curve_name`, `EC_POINT_mul` and `EC_POINT_point2oct`.
    static func multiplyGenerator(
        by scalar: borrowing BigNumber,
        curve: WeierstrassCurve
    ) throws(CardCryptoError) -> [UInt8] {
        guard let group = EC_GROUP_new_by_curve_name(curve.nid) else {
            throw libcryptoError("EC_GROUP_new_by_curve_name(\(curve.groupName))")
        }
        defer { EC_GROUP_free(group) }
        guard let order = EC_GROUP_get0_order(group), BN_is_zero(scalar.pointer) == 0,
            BN_is_negative(scalar.pointer) == 0, BN_cmp(scalar.pointer, order) < 0
        else { throw CardCryptoError(.invalidKey, "the private key is not a valid \(curve.rawValue) scalar") }
        let context = try BigNumberContext()
        guard let product = EC_POINT_new(group) else { throw libcryptoError("EC_POINT_new") }
        defer { EC_POINT_clear_free(product) }
        guard EC_POINT_mul(group, product, scalar.pointer, nil, nil, context.pointer) == 1 else {
            throw libcryptoError("EC_POINT_mul")
        }
        var out = [UInt8](repeating: 0, count: curve.pointLength)
        let written = EC_POINT_point2oct(
            group, product, POINT_CONVERSION_UNCOMPRESSED, &out, out.count, context.pointer)
        guard written == curve.pointLength else { throw libcryptoError("EC_POINT_point2oct") }
        return out
    }

    /// The key's public point, uncompressed, whatever form libcrypto keeps it in.
    static func uncompressedPoint(of key: borrowing PKey, curve: WeierstrassCurve) throws(CardCryptoError) -> [UInt8] {
        let point = try key.octets("encoded-pub-key")
        guard point.count == curve.pointLength, point.first == 0x04 else {
            throw CardCryptoError(
                .operationFailed, "libcrypto returned a \(point.count)-byte point for \(curve.rawValue)")
        }
        return point
    }
}
