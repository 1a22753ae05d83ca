import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinTestSupport

@testable import TokenpinSimulator

/// RSA and NIST/brainpool keys on the simulated card: attributes, generation, import and PSO:DECIPHER.
@Suite struct CardAlgorithmTests {
    static func rsaAttributes(_ bits: Int) -> [UInt8] {
        [0x01, UInt8(bits >> 8), UInt8(bits & 0xFF), 0x00, 0x20, 0x00]
    }
    static func ecdhAttributes(_ curve: WeierstrassCurve) -> [UInt8] { [0x12] + curve.oid }

    /// Sets the decryption key's attributes and generates it; returns the public key template's objects.
    static func generateDecryptionKey(_ harness: Harness, attributes: [UInt8]) throws -> [TLV] {
        try requireSuccess(harness.verify(0x83, "12345678"))
        try requireSuccess(harness.putData(0xC2, attributes))
        let response = try harness.generate(.decryption)
        try requireSuccess(response.statusWord)
        let template = try TLV.parseOne(response.data)
        #expect(template.tag == 0x7F49)
        #expect(try harness.readPublicKey(.decryption).data == response.data)
        return try template.children()
    }

    static func rsaDecipher(_ harness: Harness, _ cryptogram: [UInt8]) throws -> ResponseAPDU {
        try harness.send(
            CommandAPDU(
                ins: CardInstruction.performSecurityOperation, p1: 0x80, p2: 0x86,
                data: [0x00] + cryptogram, le: CommandAPDU.extendedMaxLe))
    }

    @Test("RSA 2048: generated key, PKCS#1 v1.5 cryptogram deciphered to the message", arguments: [2048])
    func rsaDecipher(bits: Int) throws {
        let harness = try Harness()
        let objects = try Self.generateDecryptionKey(harness, attributes: Self.rsaAttributes(bits))
        let modulus = try #require(objects.first { $0.tag == 0x81 }).value
        let exponent = try #require(objects.first { $0.tag == 0x82 }).value
        #expect(modulus.count == bits / 8)
        let message = SecureRandom.bytes(32)
        let cryptogram = try RSAKeys.encrypt(guardedCopy(message), modulus: modulus, publicExponent: exponent)
        #expect(try Self.rsaDecipher(harness, cryptogram).statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x82, "123456"))
        let answer = try Self.rsaDecipher(harness, cryptogram)
        #expect(answer.statusWord == .success)
        #expect(answer.data == message)
        // A cryptogram that deciphers to no PKCS#1 block, a missing padding indicator, a cv25519 template: 6A80.
        // (The block is 1, whose every power is 1: a flipped byte or another key's cryptogram still deciphers to
        // valid padding about once in 100,000 runs.)
        let unpadded = [UInt8](repeating: 0, count: modulus.count - 1) + [0x01]
        #expect(try Self.rsaDecipher(harness, unpadded).statusWord == .incorrectData)
        #expect(
            try harness.send(CardInstruction.performSecurityOperation, 0x80, 0x86, cryptogram).statusWord
                == .incorrectData)
        #expect(try harness.decipher(SecureRandom.bytes(32)).statusWord == .incorrectData)
    }

    /// The cryptogram after the padding indicator is exactly as long as the modulus, as on cards (a client such
    /// as gpg restores the leading zeros it stripped). One that starts with `00` (about one in 256) sent without
    /// its indicator is one byte short: 6A80, not deciphered as if the `00` were the indicator.
    @Test func rsaCryptogramOfAnotherLengthIsRefused() throws {
        let harness = try Harness()
        let objects = try Self.generateDecryptionKey(harness, attributes: Self.rsaAttributes(2048))
        let modulus = try #require(objects.first { $0.tag == 0x81 }).value
        let exponent = try #require(objects.first { $0.tag == 0x82 }).value
        var found: (message: [UInt8], cryptogram: [UInt8])?
        while found == nil {
            let message = SecureRandom.bytes(32)
            let cryptogram = try RSAKeys.encrypt(guardedCopy(message), modulus: modulus, publicExponent: exponent)
            if cryptogram[0] == 0x00 { found = (message, cryptogram) }
        }
        let (message, cryptogram) = try #require(found)
        try requireSuccess(harness.verify(0x82, "123456"))
        #expect(
            try harness.send(CardInstruction.performSecurityOperation, 0x80, 0x86, cryptogram).statusWord
                == .incorrectData)
        #expect(try Self.rsaDecipher(harness, Array(cryptogram.dropFirst())).statusWord == .incorrectData)
        #expect(try Self.rsaDecipher(harness, [0x00] + cryptogram).statusWord == .incorrectData)
        let answer = try Self.rsaDecipher(harness, cryptogram)
        #expect(answer.statusWord == .success)
        #expect(answer.data == message)
    }

    @Test("ECDH: generated key, the card answers the x coordinate", arguments: WeierstrassCurve.allCases)
    func ecdhDecipher(curve: WeierstrassCurve) throws {
        let harness = try Harness()
        let objects = try Self.generateDecryptionKey(harness, attributes: Self.ecdhAttributes(curve))
        let cardPoint = try #require(objects.first { $0.tag == 0x86 }).value
        #expect(cardPoint.count == curve.pointLength)
        let host = try EllipticCurveDH.generateKeyPair(on: curve)
        let expected = try EllipticCurveDH.sharedSecret(privateKey: host.privateKey, peerPoint: cardPoint, on: curve)
        try requireSuccess(harness.verify(0x82, "123456"))
        let answer = try harness.decipher(host.publicPoint)
        #expect(answer.statusWord == .success)
        #expect(expected.isEqual(to: guardedCopy(answer.data)) == true)
        var offCurve = host.publicPoint
        offCurve[offCurve.count - 1] ^= 0x01
        #expect(try harness.decipher(offCurve).statusWord == .incorrectData)
        #expect(try harness.decipher(Array(host.publicPoint.dropLast())).statusWord == .incorrectData)
    }

    @Test("attributes: RSA sizes and curves per slot; unsupported ones refused")
    func attributes() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        for bits in [2048, 3072, 4096] {
            #expect(try harness.putData(0xC2, Self.rsaAttributes(bits)) == .success)
        }
        #expect(try harness.putData(0xC2, [0x01, 0x08, 0x00, 0x00, 0x20]) == .success)  // gpg's 5-byte form
        #expect(try harness.putData(0xC2, Self.rsaAttributes(1024)) == .incorrectData)
        #expect(try harness.putData(0xC2, Self.rsaAttributes(2040)) == .incorrectData)
        for curve in WeierstrassCurve.allCases {
            #expect(try harness.putData(0xC2, Self.ecdhAttributes(curve)) == .success)
            #expect(try harness.putData(0xC1, [0x13] + curve.oid) == .success)
            #expect(try harness.putData(0xC3, [0x13] + curve.oid + [0xFF]) == .success)
            #expect(try harness.putData(0xC1, Self.ecdhAttributes(curve)) == .incorrectData)
            #expect(try harness.putData(0xC2, [0x13] + curve.oid) == .incorrectData)
        }
        #expect(try harness.putData(0xC2, [0x12, 0x2B, 0x81, 0x04, 0x00, 0x0A]) == .incorrectData)  // secp256k1
        #expect(try harness.getData(0xC2).data == Self.ecdhAttributes(.brainpoolP512r1))
    }

    /// A key import command: `4D { CRT, 7F48 header list, 5F48 values }`.
    static func importCommand(slot: KeySlot, parts: [(UInt32, [UInt8])]) -> CommandAPDU {
        var template: [UInt8] = []
        for (tag, value) in parts { template += [UInt8(tag)] + TLV.encodeLength(value.count) }
        let header = TLV(
            tag: 0x4D,
            children: [
                TLV(tag: UInt32(slot.crtTag), value: []), TLV(tag: 0x7F48, value: template),
                TLV(tag: 0x5F48, value: parts.flatMap(\.1)),
            ])
        return CommandAPDU(
            ins: CardInstruction.putDataOdd, p1: 0x3F, p2: 0xFF, data: header.encoded,
            le: nil)
    }

    @Test("import: an RSA key in CRT form (e, p, q, and the rest), then decipher with it")
    func importRSA() throws {
        let harness = try Harness()
        let key = try RSAKeys.generate(bits: 2048)
        let p = key.prime1.withUnsafeBytes { Array($0) }
        let q = key.prime2.withUnsafeBytes { Array($0) }
        try requireSuccess(harness.verify(0x83, "12345678"))
        try requireSuccess(harness.putData(0xC2, [0x01, 0x08, 0x00, 0x00, 0x20, 0x02]))
        let crt: [(UInt32, [UInt8])] = [
            (0x91, [0x00] + key.publicExponent), (0x92, p), (0x93, q),
            (0x94, SecureRandom.bytes(128)), (0x95, SecureRandom.bytes(128)),
            (0x96, SecureRandom.bytes(128)),
        ]
        #expect(
            try harness.send(Self.importCommand(slot: .decryption, parts: Array(crt.prefix(2)))).statusWord
                == .incorrectData)
        #expect(
            try harness.send(Self.importCommand(slot: .decryption, parts: [crt[0], crt[1], crt[1]])).statusWord
                == .incorrectData)
        #expect(try harness.send(Self.importCommand(slot: .decryption, parts: crt)).statusWord == .success)
        let objects = try TLV.parseOne(harness.readPublicKey(.decryption).data).children()
        #expect(objects.first { $0.tag == 0x81 }?.value == key.modulus)
        let message = SecureRandom.bytes(32)
        let cryptogram = try RSAKeys.encrypt(
            guardedCopy(message), modulus: key.modulus, publicExponent: key.publicExponent)
        try requireSuccess(harness.verify(0x82, "123456"))
        #expect(try Self.rsaDecipher(harness, cryptogram).data == message)
    }

    @Test("import: a P-256 scalar, then decipher with it")
    func importECDH() throws {
        let harness = try Harness()
        let key = try EllipticCurveDH.generateKeyPair(on: .nistP256)
        try requireSuccess(harness.verify(0x83, "12345678"))
        try requireSuccess(harness.putData(0xC2, Self.ecdhAttributes(.nistP256) + [0xFF]))
        let scalar = key.privateKey.withUnsafeBytes { Array($0) }
        #expect(
            try harness.send(
                Self.importCommand(slot: .decryption, parts: [(0x92, [UInt8](repeating: 0xFF, count: 32))])
            )
            .statusWord == .incorrectData)
        #expect(
            try harness.send(Self.importCommand(slot: .decryption, parts: [(0x92, scalar), (0x99, key.publicPoint)]))
                .statusWord == .success)
        let objects = try TLV.parseOne(harness.readPublicKey(.decryption).data).children()
        #expect(objects.first { $0.tag == 0x86 }?.value == key.publicPoint)
    }

    @Test("state file: an RSA key and a P-384 key survive a restart")
    func persistence() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/card.json"
        let first = try Harness(card: SimulatedCard(stateFile: path, serial: 0x0102_0304))
        let rsa = try Self.generateDecryptionKey(first, attributes: Self.rsaAttributes(2048))
        try requireSuccess(first.putData(0xC3, [0x13] + WeierstrassCurve.nistP384.oid))
        try requireSuccess(first.generate(.authentication).statusWord)
        let authentication = try first.readPublicKey(.authentication).data
        let second = try Harness(card: SimulatedCard(stateFile: path))
        #expect(try TLV.parseOne(second.readPublicKey(.decryption).data).children() == rsa)
        #expect(try second.readPublicKey(.authentication).data == authentication)
    }
}

/// Signatures with RSA and ECDSA keys, which gpg needs to certify keys it generates on the card.
@Suite struct CardSignatureTests {
    @Test("PSO:CDS with RSA 2048: PKCS#1 v1.5 over the DigestInfo, checked with the public key")
    func rsaSignature() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        try requireSuccess(harness.putData(0xC1, CardAlgorithmTests.rsaAttributes(2048)))
        let objects = try TLV.parseOne(harness.generate(.signature).data).children()
        let modulus = try #require(objects.first { $0.tag == 0x81 }).value
        try requireSuccess(harness.verify(0x81, "123456"))
        let digestInfo =
            [
                0x30, 0x31, 0x30, 0x0D, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05,
                0x00, 0x04, 0x20,
            ] + SecureRandom.bytes(32)
        let answer = try harness.send(
            CommandAPDU(
                ins: CardInstruction.performSecurityOperation, p1: 0x9E, p2: 0x9A,
                data: digestInfo, le: CommandAPDU.extendedMaxLe))
        #expect(answer.statusWord == .success)
        #expect(answer.data.count == modulus.count)
    }

    @Test("INTERNAL AUTHENTICATE with ECDSA P-256: r || s of 64 bytes")
    func ecdsaSignature() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        try requireSuccess(harness.putData(0xC3, [0x13] + WeierstrassCurve.nistP256.oid))
        try requireSuccess(harness.generate(.authentication).statusWord)
        try requireSuccess(harness.verify(0x82, "123456"))
        let answer = try harness.send(CardInstruction.internalAuthenticate, 0x00, 0x00, SecureRandom.bytes(32), le: 256)
        #expect(answer.statusWord == .success)
        #expect(answer.data.count == 64)
        #expect(
            try harness.send(CardInstruction.internalAuthenticate, 0x00, 0x00, [], le: 256).statusWord == .wrongLength)
    }
}

/// The KDF-DO (`F9`): switched on and off with PUT DATA; while on, the card compares digests.
@Suite struct KDFDataObjectTests {
    static func digest(_ pin: String, salt: [UInt8], count: Int = 100_000) throws -> [UInt8] {
        try IteratedSaltedS2K.derive(pin: guardedCopy(Array(pin.utf8)), salt: salt, count: count, hash: .sha256)
            .withUnsafeBytes { Array($0) }
    }

    @Test("F9: announced in C0, off by default, on makes the PINs digests, off makes them the factory PINs")
    func switchOnAndOff() throws {
        let harness = try Harness()
        #expect(try harness.getData(0xC0).data[0] & 0x01 == 0x01)
        #expect(try harness.getData(0xF9).data == [0x81, 0x01, 0x00])
        let salt = SecureRandom.bytes(8)
        let on = [
            TLV(tag: 0x81, value: [0x03]), TLV(tag: 0x82, value: [0x08]), TLV(tag: 0x83, value: [0, 1, 0x86, 0xA0]),
            TLV(tag: 0x84, value: salt), TLV(tag: 0x87, value: try Self.digest("123456", salt: salt)),
        ].flatMap(\.encoded)
        #expect(try harness.putData(0xF9, on) == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x83, "12345678"))
        #expect(try harness.putData(0xF9, [0x81, 0x01, 0x03]) == .incorrectData)
        #expect(try harness.putData(0xF9, on) == .success)
        #expect(try harness.getData(0xF9).data == on)
        #expect(try harness.verify(0x82, "123456") == .wrongPIN(retriesLeft: 2), "the plain PIN no longer verifies")
        #expect(
            try harness.send(CardInstruction.verify, 0x00, 0x82, Self.digest("123456", salt: salt)).statusWord
                == .success)
        // Without 88 the admin PIN's digest uses the PW1 salt.
        #expect(
            try harness.send(CardInstruction.verify, 0x00, 0x83, Self.digest("12345678", salt: salt)).statusWord
                == .success)
        #expect(try harness.putData(0xF9, [0x81, 0x01, 0x00]) == .success)
        #expect(try harness.verify(0x82, "123456") == .success)
    }
}
