import COpenSSL
import Testing
import TokenpinCore

@testable import TokenpinCardCrypto

/// Public keys whose private key anyone knows, found before a binding uses them.
@Suite struct KnownLogarithmTests {
    /// `k` as a big-endian scalar of `length` bytes.
    static func scalar(_ k: Int, length: Int) -> SecretBytes {
        var bytes = [UInt8](repeating: 0, count: length)
        var value = k
        for index in stride(from: length - 1, through: 0, by: -1) where value > 0 {
            bytes[index] = UInt8(value & 0xFF)
            value >>= 8
        }
        return SecretBytes(consuming: &bytes)
    }

    @Test(arguments: WeierstrassCurve.allCases)
    func smallMultiplesOfTheGeneratorAreFoundWithTheirLogarithm(curve: WeierstrassCurve) throws {
        for k in [1, 2, 3, 255, EllipticCurveDH.smallMultipleBound] {
            let point = try EllipticCurveDH.publicPoint(for: Self.scalar(k, length: curve.coordinateLength), on: curve)
            #expect(try EllipticCurveDH.knownLogarithm(of: point, on: curve) == k, "\(curve) \(k)·G")
            // -k·G: the same x coordinate, the same secret for anyone.
            let negated = try EllipticCurveDH.negated(point, on: curve)
            #expect(
                negated != point && negated[..<(1 + curve.coordinateLength)] == point[..<(1 + curve.coordinateLength)])
            #expect(try EllipticCurveDH.knownLogarithm(of: negated, on: curve) == k, "\(curve) -\(k)·G")
        }
        let beyond = try EllipticCurveDH.publicPoint(
            for: Self.scalar(EllipticCurveDH.smallMultipleBound + 1, length: curve.coordinateLength), on: curve)
        #expect(try EllipticCurveDH.knownLogarithm(of: beyond, on: curve) == nil)
        let random = try EllipticCurveDH.generateKeyPair(on: curve)
        #expect(try EllipticCurveDH.knownLogarithm(of: random.publicPoint, on: curve) == nil)
    }

    /// G, 2G, ... `count`·G by libcrypto, one `EC_POINT_add` at a time (what `knownLogarithm` walked at every call
    /// before the tables), uncompressed.
    static func referenceMultiples(on curve: WeierstrassCurve, count: Int) throws -> [[UInt8]] {
        let group = try #require(EC_GROUP_new_by_curve_name(curve.nid))
        defer { EC_GROUP_free(group) }
        let context = try BigNumberContext()
        let generator = try #require(EC_GROUP_get0_generator(group))
        let multiple = try #require(EC_POINT_new(group))
        defer { EC_POINT_free(multiple) }
        try #require(EC_POINT_copy(multiple, generator) == 1)
        var points: [[UInt8]] = []
        for _ in 1...count {
            var out = [UInt8](repeating: 0, count: curve.pointLength)
            let written = EC_POINT_point2oct(
                group, multiple, POINT_CONVERSION_UNCOMPRESSED, &out, out.count, context.pointer)
            try #require(written == curve.pointLength)
            points.append(out)
            try #require(EC_POINT_add(group, multiple, multiple, generator, context.pointer) == 1)
        }
        return points
    }

    /// The table's prefix of an x coordinate: its first 8 bytes as a big-endian integer.
    static func prefix(_ x: some Collection<UInt8>) -> UInt64 {
        x.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    @Test(arguments: WeierstrassCurve.allCases)
    func everyTableEntryIsThePrefixOfLibcryptosMultiple(curve: WeierstrassCurve) throws {
        let reference = try Self.referenceMultiples(on: curve, count: EllipticCurveDH.smallMultipleBound)
        #expect(curve.multiplePrefixes.count == EllipticCurveDH.smallMultipleBound)
        for (index, prefix) in curve.multiplePrefixes.enumerated() {
            #expect(prefix == Self.prefix(reference[index][1...curve.coordinateLength]), "\(curve) \(index + 1)·G")
        }
    }

    /// The walk's points, ±k·G, are known with their k, and the one after the bound is not. Every 31st k and the
    /// last (the table itself is checked whole above): a confirmation is a whole constant-time multiplication,
    /// up to 1.7 ms on brainpoolP512r1.
    @Test(arguments: WeierstrassCurve.allCases)
    func smallMultiplesOfTheWalkAreKnownWithTheirLogarithmAndTheNextIsNot(curve: WeierstrassCurve) throws {
        let bound = EllipticCurveDH.smallMultipleBound
        let reference = try Self.referenceMultiples(on: curve, count: bound + 1)
        for k in Array(stride(from: 1, to: bound, by: 31)) + [bound] {
            let point = reference[k - 1]
            #expect(try EllipticCurveDH.knownLogarithm(of: point, on: curve) == k, "\(curve) \(k)·G")
            let negated = try EllipticCurveDH.negated(point, on: curve)
            #expect(try EllipticCurveDH.knownLogarithm(of: negated, on: curve) == k, "\(curve) -\(k)·G")
        }
        #expect(try EllipticCurveDH.knownLogarithm(of: reference[bound], on: curve) == nil)
    }

    @Test(arguments: WeierstrassCurve.allCases)
    func randomPointsAreNeverKnown(curve: WeierstrassCurve) throws {
        for _ in 0..<50 {
            let pair = try EllipticCurveDH.generateKeyPair(on: curve)
            #expect(try EllipticCurveDH.knownLogarithm(of: pair.publicPoint, on: curve) == nil)
            let negated = try EllipticCurveDH.negated(pair.publicPoint, on: curve)
            #expect(try EllipticCurveDH.knownLogarithm(of: negated, on: curve) == nil)
        }
    }

    /// The real table, and a point with 5·G's prefix but another rest: not known. (Not a point of the curve, so
    /// only the scan behind the validation can be shown it.)
    @Test(arguments: WeierstrassCurve.allCases)
    func aPrefixOfTheTableWithAnotherRestIsNotKnown(curve: WeierstrassCurve) throws {
        let fiveG = try EllipticCurveDH.publicPoint(for: Self.scalar(5, length: curve.coordinateLength), on: curve)
        #expect(try EllipticCurveDH.knownMultiple(of: fiveG, on: curve, among: curve.multiplePrefixes) == 5)
        for byte in [9, curve.coordinateLength] {
            var changed = fiveG
            changed[byte] ^= 0x40
            #expect(Self.prefix(changed[1...curve.coordinateLength]) == curve.multiplePrefixes[4])
            #expect(try EllipticCurveDH.knownMultiple(of: changed, on: curve, among: curve.multiplePrefixes) == nil)
        }
    }

    /// No valid point is known whose x shares a prefix with a small multiple's, so the test brings its own table: a
    /// prefix claimed by an entry whose k·G is not the point is passed over, and the scan goes on.
    @Test(arguments: WeierstrassCurve.allCases)
    func aSharedPrefixThatIsNotConfirmedIsPassedOverAndTheScanGoesOn(curve: WeierstrassCurve) throws {
        let random = try EllipticCurveDH.generateKeyPair(on: curve).publicPoint
        let randomPrefix = Self.prefix(random[1...curve.coordinateLength])
        #expect(try EllipticCurveDH.knownMultiple(of: random, on: curve, among: [randomPrefix, randomPrefix]) == nil)
        let fiveG = try EllipticCurveDH.publicPoint(for: Self.scalar(5, length: curve.coordinateLength), on: curve)
        let prefix = Self.prefix(fiveG[1...curve.coordinateLength])
        #expect(try EllipticCurveDH.knownMultiple(of: fiveG, on: curve, among: [prefix, 0, 0, 0, prefix]) == 5)
        let negated = try EllipticCurveDH.negated(fiveG, on: curve)
        #expect(try EllipticCurveDH.knownMultiple(of: negated, on: curve, among: [prefix, 0, 0, 0, prefix]) == 5)
        #expect(try EllipticCurveDH.knownMultiple(of: fiveG, on: curve, among: [prefix, prefix, prefix]) == nil)
    }

    @Test func aPointOffTheCurveIsRefusedNotJudged() throws {
        var point = try EllipticCurveDH.publicPoint(for: Self.scalar(5, length: 32), on: .nistP256)
        point[64] ^= 1
        #expect(throws: CardCryptoError.self) { try EllipticCurveDH.knownLogarithm(of: point, on: .nistP256) }
    }

    @Test func cv25519BaseMultiplesSmallOrderAndTheZeroSecret() throws {
        #expect(X25519.knownLogarithm(of: [9] + [UInt8](repeating: 0, count: 31)) == "1")
        var zero = [UInt8](repeating: 0, count: 32)
        let zeroKey = try X25519.publicKey(for: SecretBytes(consuming: &zero))
        #expect(X25519.knownLogarithm(of: zeroKey) == "2^254")
        #expect(X25519.isSmallOrder([0] + [UInt8](repeating: 0, count: 31)))
        #expect(X25519.isSmallOrder([1] + [UInt8](repeating: 0, count: 31)))
        let pair = try X25519.generateKeyPair()
        #expect(X25519.knownLogarithm(of: pair.publicKey) == nil)
        #expect(!X25519.isSmallOrder(pair.publicKey))
    }
}
