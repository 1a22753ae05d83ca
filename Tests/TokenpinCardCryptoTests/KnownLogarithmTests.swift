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
