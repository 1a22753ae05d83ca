import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinOpenPGP
import TokenpinSimulator
import TokenpinTestSupport

/// PSO:DECIPHER for RSA and NIST/brainpool ECDH keys (OpenPGP card 3.4.1, §7.2.11).
@Suite struct DecipherAlgorithmTests {
    /// Sets the decryption key's attributes, generates it and verifies PW1; returns the public key.
    static func provision(_ fixture: Fixture, _ attributes: TokenpinOpenPGP.AlgorithmAttributes) throws -> CardPublicKey
    {
        try fixture.session.select()
        _ = try fixture.session.applicationRelatedData()
        try fixture.session.verify(.pw3, pin: secret("12345678"))
        try fixture.session.setAlgorithmAttributes(attributes, for: .decryption)
        let key = try fixture.session.generateKey(for: .decryption)
        try fixture.session.verify(.pw1, pin: secret("123456"))
        return key
    }

    static let rsa2048 = TokenpinOpenPGP.AlgorithmAttributes.rsa(modulusBits: 2048, exponentBits: 17, importFormat: 0)

    @Test(
        "RSA: extended APDU when the card takes them, chained otherwise; the answer is the message",
        arguments: [true, false])
    func rsa(extended: Bool) throws {
        let fixture = try Fixture()
        guard case .rsa(let modulus, let exponent) = try Self.provision(fixture, Self.rsa2048) else {
            Issue.record("no RSA public key")
            return
        }
        fixture.connection.lengthCapabilities = LengthCapabilities(
            extendedLength: extended, commandChaining: true, maxCommandData: extended ? 2048 : 255)
        let message = SecureRandom.secret(32)
        let cryptogram = try RSAKeys.encrypt(message, modulus: modulus, publicExponent: exponent)
        let before = fixture.connection.counter.headers.count
        let answer = try fixture.session.decipher(rsaCryptogram: cryptogram)
        #expect(answer.isEqual(to: message) == true)
        let sent = Array(fixture.connection.counter.headers[before...])
        #expect(sent.count == (extended ? 1 : 2))
        #expect(sent.allSatisfy { $0[1] == 0x2A })
        if !extended { #expect(sent[0][0] == 0x10, "the first part is chained") }
        #expect(
            !fixture.traceLines.contains {
                $0.contains(Hex.encode(message.withUnsafeBytes { Array($0) }, separator: " "))
            })
    }

    @Test("RSA: a cryptogram that does not decipher is the card's 6A80; empty input is refused before sending")
    func rsaErrors() throws {
        let fixture = try Fixture()
        _ = try Self.provision(fixture, Self.rsa2048)
        // 1 deciphers to 1 under any key: never a PKCS#1 block. (Another key's cryptogram, the obvious choice,
        // deciphers to valid padding about once in 100,000 runs.)
        let undecipherable = [UInt8](repeating: 0, count: 255) + [0x01]
        #expect(throws: OpenPGPError.incorrectData) {
            _ = try fixture.session.decipher(rsaCryptogram: undecipherable)
        }
        let empty = #expect(throws: OpenPGPError.self) { _ = try fixture.session.decipher(rsaCryptogram: []) }
        if case .invalidArgument = empty {
        } else {
            Issue.record("expected invalidArgument, got \(String(describing: empty))")
        }
    }

    @Test(
        "ECDH: the card's answer is the x coordinate",
        arguments: [
            (Curve.nistP256, WeierstrassCurve.nistP256), (.nistP384, .nistP384), (.nistP521, .nistP521),
            (.brainpoolP512r1, .brainpoolP512r1),
        ])
    func ecdh(curve: Curve, weierstrass: WeierstrassCurve) throws {
        let fixture = try Fixture()
        guard case .ecc(let point) = try Self.provision(fixture, .ecdh(curve, importFormat: nil)) else {
            Issue.record("no EC public key")
            return
        }
        let ephemeral = try EllipticCurveDH.generateKeyPair(on: weierstrass)
        let expected = try EllipticCurveDH.sharedSecret(
            privateKey: ephemeral.privateKey, peerPoint: point, on: weierstrass)
        let answer = try fixture.session.decipher(ecdhPoint: ephemeral.publicPoint)
        #expect(answer.isEqual(to: expected) == true)
    }

    @Test(
        "ECDH: a compressed or raw point is refused before sending",
        arguments: [
            [0x02] + [UInt8](repeating: 1, count: 32), [UInt8](repeating: 1, count: 32),
            [0x04] + [UInt8](repeating: 1, count: 63),
        ])
    func ecdhBadPoints(point: [UInt8]) throws {
        let fixture = try Fixture()
        try fixture.session.select()
        let before = fixture.connection.counter.headers.count
        let error = #expect(throws: OpenPGPError.self) { _ = try fixture.session.decipher(ecdhPoint: point) }
        if case .invalidArgument = error {
        } else {
            Issue.record("expected invalidArgument, got \(String(describing: error))")
        }
        #expect(fixture.connection.counter.headers.count == before)
    }
}
