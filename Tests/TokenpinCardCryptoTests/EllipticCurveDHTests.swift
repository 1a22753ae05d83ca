import Testing
import TokenpinCardCrypto
import TokenpinCore

/// RFC 5903, §8.1: the ECDH test vector for the 256-bit random ECP group (P-256).
enum P256Vector {
    static let initiatorPrivate = hex("C88F01F510D9AC3F70A292DAA2316DE544E9AAB8AFE84049C62A9C57862D1433")
    static let initiatorPublic = hex(
        "04DAD0B65394221CF9B051E1FECA5787D098DFE637FC90B9EF945D0C3772581180"
            + "5271A0461CDB8252D61F1C456FA3E59AB1F45B33ACCF5F58389E0577B8990BB3")
    static let responderPrivate = hex("C6EF9C5D78AE012A011164ACB397CE2088685D8F06BF9BE0B283AB46476BEE53")
    static let responderPublic = hex(
        "04D12DFB5289C8D4F81208B70270398C342296970A0BCCB74C736FC7554494BF63"
            + "56FBF3CA366CC23E8157854C13C58D6AAC23F046ADA30F8353E74F33039872AB")
    static let sharedX = hex("D6840F6B42F6EDAFD13116E0E12565202FEF8E9ECE7DCE03812464D04B9442DE")
}

@Suite struct EllipticCurveDHTests {
    @Test func rfc5903Vector() throws {
        let initiator = secret(P256Vector.initiatorPrivate)
        let responder = secret(P256Vector.responderPrivate)
        #expect(try EllipticCurveDH.publicPoint(for: initiator, on: .nistP256) == P256Vector.initiatorPublic)
        #expect(try EllipticCurveDH.publicPoint(for: responder, on: .nistP256) == P256Vector.responderPublic)
        let one = try EllipticCurveDH.sharedSecret(
            privateKey: initiator, peerPoint: P256Vector.responderPublic, on: .nistP256)
        let other = try EllipticCurveDH.sharedSecret(
            privateKey: responder, peerPoint: P256Vector.initiatorPublic,
            on: .nistP256)
        #expect(one.isEqual(to: secret(P256Vector.sharedX)) == true)
        #expect(other.isEqual(to: secret(P256Vector.sharedX)) == true)
    }

    @Test(arguments: WeierstrassCurve.allCases)
    func agreementRoundTrips(curve: WeierstrassCurve) throws {
        let card = try EllipticCurveDH.generateKeyPair(on: curve)
        let ephemeral = try EllipticCurveDH.generateKeyPair(on: curve)
        #expect(card.publicPoint.count == curve.pointLength)
        #expect(card.publicPoint.first == 0x04)
        #expect(card.privateKey.count == curve.coordinateLength)
        #expect(try EllipticCurveDH.publicPoint(for: card.privateKey, on: curve) == card.publicPoint)
        let host = try EllipticCurveDH.sharedSecret(
            privateKey: ephemeral.privateKey, peerPoint: card.publicPoint, on: curve)
        let answer = try EllipticCurveDH.sharedSecret(
            privateKey: card.privateKey, peerPoint: ephemeral.publicPoint, on: curve)
        #expect(host.count == curve.coordinateLength)
        #expect(host.isEqual(to: answer) == true)
        #expect(ephemeral.publicPoint != card.publicPoint)
    }

    @Test(
        "an ephemeral agreement gives the point the card answers for and the secret it answers",
        arguments: WeierstrassCurve.allCases)
    func ephemeralAgreementMatchesTheCardsAnswer(curve: WeierstrassCurve) throws {
        let card = try EllipticCurveDH.generateKeyPair(on: curve)
        let agreement = try EllipticCurveDH.ephemeralAgreement(peerPoint: card.publicPoint, on: curve)
        #expect(agreement.publicPoint.count == curve.pointLength)
        #expect(agreement.publicPoint.first == 0x04)
        try EllipticCurveDH.validate(point: agreement.publicPoint, on: curve)
        let answer = try EllipticCurveDH.sharedSecret(
            privateKey: card.privateKey, peerPoint: agreement.publicPoint, on: curve)
        #expect(agreement.secret.count == curve.coordinateLength)
        #expect(agreement.secret.isEqual(to: answer) == true)
        let again = try EllipticCurveDH.ephemeralAgreement(peerPoint: card.publicPoint, on: curve)
        #expect(again.publicPoint != agreement.publicPoint)
    }

    @Test func ephemeralAgreementRefusesAPointOffTheCurve() throws {
        var point = P256Vector.responderPublic
        point[point.count - 1] ^= 0x01
        let error = #expect(throws: CardCryptoError.self) {
            _ = try EllipticCurveDH.ephemeralAgreement(peerPoint: point, on: .nistP256)
        }
        #expect(error?.code == .pointNotOnCurve)
        let short = #expect(throws: CardCryptoError.self) {
            _ = try EllipticCurveDH.ephemeralAgreement(peerPoint: Array(point.prefix(33)), on: .nistP256)
        }
        #expect(short?.code == .invalidLength)
    }

    @Test func pointOffTheCurveIsRefused() throws {
        var point = P256Vector.responderPublic
        point[point.count - 1] ^= 0x01
        let error = #expect(throws: CardCryptoError.self) {
            _ = try EllipticCurveDH.sharedSecret(
                privateKey: secret(P256Vector.initiatorPrivate), peerPoint: point, on: .nistP256)
        }
        #expect(error?.code == .pointNotOnCurve)
        let validation = #expect(throws: CardCryptoError.self) {
            try EllipticCurveDH.validate(point: point, on: .nistP256)
        }
        #expect(validation?.code == .pointNotOnCurve)
    }

    @Test func pointOfAnotherCurveIsRefused() throws {
        let brainpool = try EllipticCurveDH.generateKeyPair(on: .brainpoolP256r1)
        let error = #expect(throws: CardCryptoError.self) {
            try EllipticCurveDH.validate(point: brainpool.publicPoint, on: .nistP256)
        }
        #expect(error?.code == .pointNotOnCurve)
    }

    @Test func compressedPointIsRefused() throws {
        var compressed = [UInt8](repeating: 0, count: 65)
        compressed[0] = 0x02
        let error = #expect(throws: CardCryptoError.self) {
            try EllipticCurveDH.validate(point: compressed, on: .nistP256)
        }
        #expect(error?.code == .pointNotOnCurve)
    }

    @Test(arguments: [0, 1, 33, 64, 66, 97])
    func pointOfTheWrongLengthIsRefused(length: Int) throws {
        let point = Array(P256Vector.responderPublic.prefix(length)) + [UInt8](repeating: 0, count: max(0, length - 65))
        let error = #expect(throws: CardCryptoError.self) { try EllipticCurveDH.validate(point: point, on: .nistP256) }
        #expect(error?.code == .invalidLength)
    }

    @Test func badScalarsAreRefused() throws {
        let short = #expect(throws: CardCryptoError.self) {
            _ = try EllipticCurveDH.publicPoint(for: secret([0x01]), on: .nistP256)
        }
        #expect(short?.code == .invalidLength)
        let zero = #expect(throws: CardCryptoError.self) {
            _ = try EllipticCurveDH.publicPoint(for: SecretBytes(count: 32), on: .nistP256)
        }
        #expect(zero?.code == .invalidKey)
        let overOrder = #expect(throws: CardCryptoError.self) {
            _ = try EllipticCurveDH.publicPoint(for: secret([UInt8](repeating: 0xFF, count: 32)), on: .nistP256)
        }
        #expect(overOrder?.code == .invalidKey)
    }
}
