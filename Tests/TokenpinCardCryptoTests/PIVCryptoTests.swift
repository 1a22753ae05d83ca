import Testing
import TokenpinCardCrypto
import TokenpinCore

/// What the PIV card needs from libcrypto: ECB block ciphers for the management key, raw RSA, ECDSA checks.
@Suite struct PIVCryptoTests {
    /// SP 800-67 rev. 1, appendix B (TDEA example, first block) and FIPS-197, appendix C (AES).
    @Test(arguments: [
        (
            BlockCiphers.Algorithm.tripleDES, "0123456789ABCDEF23456789ABCDEF01456789ABCDEF0123", "5468652071756663",
            "A826FD8CE53B855F"
        ),
        (
            .aes128, "000102030405060708090A0B0C0D0E0F", "00112233445566778899AABBCCDDEEFF",
            "69C4E0D86A7B0430D8CDB78070B4C55A"
        ),
        (
            .aes192, "000102030405060708090A0B0C0D0E0F1011121314151617", "00112233445566778899AABBCCDDEEFF",
            "DDA97CA4864CDFE06EAF70A0EC0D7191"
        ),
        (
            .aes256, "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F",
            "00112233445566778899AABBCCDDEEFF",
            "8EA2B7CA516745BFEAFC49904B496089"
        ),
    ])
    func knownAnswers(algorithm: BlockCiphers.Algorithm, key: String, plain: String, cipher: String) throws {
        #expect(try BlockCiphers.encrypt(hex(plain), key: secret(hex(key)), algorithm: algorithm) == hex(cipher))
        #expect(try BlockCiphers.decrypt(hex(cipher), key: secret(hex(key)), algorithm: algorithm) == hex(plain))
    }

    @Test func blockCipherLengths() {
        #expect(throws: CardCryptoError(.invalidLength, "AES-128 keys have 16 bytes, not 24")) {
            try BlockCiphers.encrypt(
                [UInt8](repeating: 0, count: 16), key: secret([UInt8](repeating: 1, count: 24)), algorithm: .aes128)
        }
        #expect(throws: CardCryptoError(.invalidLength, "9 bytes are not whole 8-byte blocks")) {
            try BlockCiphers.encrypt(
                [UInt8](repeating: 0, count: 9), key: secret([UInt8](repeating: 1, count: 24)), algorithm: .tripleDES)
        }
    }

    @Test func rawRSARoundTrip() throws {
        let key = try RSAKeys.generate(bits: 2048)
        var block = [UInt8](repeating: 0, count: 256)
        block[1] = 0x02
        for index in 2..<200 { block[index] = UInt8(index) }
        let encrypted = try RSAKeys.rawPublic(secret(block), modulus: key.modulus, publicExponent: key.publicExponent)
        let decrypted = try RSAKeys.rawPrivate(encrypted, with: key)
        #expect(decrypted.isEqual(to: secret(block)) == true)
        #expect(throws: CardCryptoError(.invalidLength, "a block of 255 bytes for a 256-byte modulus")) {
            _ = try RSAKeys.rawPrivate(Array(encrypted.dropFirst()), with: key)
        }
    }

    @Test func ecdsaVerification() throws {
        let pair = try EllipticCurveDH.generateKeyPair(on: .nistP256)
        let digest = [UInt8](repeating: 7, count: 32)
        let raw = try CardSignatures.ecdsaSign(digest, privateKey: pair.privateKey, on: .nistP256)
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.first.map({ $0 & 0x80 != 0 }) ?? true { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw.prefix(32)) + integer(raw.suffix(32))
        let der = [0x30, UInt8(body.count)] + body
        #expect(try CardSignatures.ecdsaVerify(der: der, digest: digest, publicPoint: pair.publicPoint, on: .nistP256))
        #expect(
            try !CardSignatures.ecdsaVerify(
                der: der, digest: [UInt8](repeating: 8, count: 32), publicPoint: pair.publicPoint,
                on: .nistP256))
    }
}
