import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore

/// A 2048-bit key and a PKCS#1 v1.5 cryptogram made with pyca/cryptography, to check decryption against
/// another implementation's encryption.
enum RSAVector {
    static let prime1 = hex(
        "ff054ad931db8710c6c02eed69a77f0d684cb6966ab64718d7724551bda4a96817906b64b9a0b3e5e57a44c628426f8d"
            + "1822b677e38a7c80b407431bf25ea62092b923ebbff44d8121e0c5d978bf3d7dc432e58f7c4befe66bc67c764f4a9542"
            + "49e6ec9039444344a7e91002e88b5459f68dcbea16a6c6ed9838ef977ca20cab")
    static let prime2 = hex(
        "ec0fd932e65ed707f2d03c6c8b31ddb4efef3ef56b78c02f82807f7e1ab3b0b5a63e3529e32da6e2461136fe9cd4b14f"
            + "8c335f92396f26276628fb5bf58468fab725ae7e34359f3961728857ec9c5fb327111699bc948efc08d7eda11b40feaf"
            + "128ce1b0a1dd526bab507c6983d7cf884960587e60371d96761889901b07f135")
    static let modulus = hex(
        "eb28aaadcda841752f01da493cd37fd8f1e42c8a695c1a2ef6a50e8b1856f76a940515e4e243d526d63a943090fe0ac2"
            + "a2998d19e2eb23394cd355d73dc7c531d5c76a7aa9a31cedeb0f261848ba173547cee7d84439e8d53efacdd6d1673619"
            + "0b066d79cc65b187a731a557074540f8c411fd858da852ea7b6f079071de4b3c9161778b986ef0be993dd0f231751765"
            + "ef32e21db43e31df0c989f519a5c552d01017ab96657134086fa79a2076f3b1db6b21d60a55c2eaa4e3f274bf9c6991c"
            + "c9d585bbd09a5d69aa58923b35baeb742dc3fc2b752e261108da765028c7234bad63f29e8493a5060b7ce0209e0d4c68"
            + "70d877d2ce5f09747a9759a5bd269a67")
    static let cryptogram = hex(
        "a294fb0fb6822af59309d062fc7d6b5b9da3ff6d86e4bb5328a86a4a3438a1a41a1c9699a69a53cd59b454350b9f141f"
            + "9940a4a40ac5a63a736d837916ab67704d2f15b0bd983cb82ea0a2ec2b7b01ad39450142ec405fd4dcc37ad56444b5fc"
            + "d0d659b28b37231c7f2e7147caa59074d40fbef3229f7efcccedbd2bbca2f8db93b10ae148e9a5ab40a2943dacbdc900"
            + "b5f7096a609e6f249ca29f7d38d1016bbfd7b1341eeeb09cbc2e446d709101e4006ae5cc2bf0ea686edb8833c78e14cc"
            + "648ecca79c48b5a2678bab260fb882f9f3b948dccadf12ebee410004367c176a11aca0bff7b6f702412ded26eba924cc"
            + "09387b820df75cdb1427d46bb5734bd2")
    static let message = Array("tokenpin known vector 0123456789".utf8)
}

func hex(_ text: String) -> [UInt8] { Hex.decode(text) ?? [] }

func secret(_ bytes: [UInt8]) -> SecretBytes {
    var copy = bytes
    return SecretBytes(consuming: &copy)
}

@Suite struct RSAKeysTests {
    @Test func decryptsAnotherImplementationsCryptogram() throws {
        let key = try RSAKeys.privateKey(
            publicExponent: RSAKeys.defaultExponent, prime1: secret(RSAVector.prime1),
            prime2: secret(RSAVector.prime2))
        #expect(key.modulus == RSAVector.modulus)
        #expect(key.modulusBits == 2048)
        let plain = try RSAKeys.decrypt(RSAVector.cryptogram, with: key)
        #expect(plain.isEqual(to: secret(RSAVector.message)) == true)
    }

    @Test(arguments: [2048, 3072, 4096])
    func generatedKeysRoundTrip(bits: Int) throws {
        let key = try RSAKeys.generate(bits: bits)
        #expect(key.modulusBits == bits)
        #expect(key.publicExponent == RSAKeys.defaultExponent)
        let message = SecureRandom.secret(32)
        let cryptogram = try RSAKeys.encrypt(message, modulus: key.modulus, publicExponent: key.publicExponent)
        #expect(cryptogram.count == bits / 8)
        let plain = try RSAKeys.decrypt(cryptogram, with: key)
        #expect(plain.isEqual(to: message) == true)
        // Randomised padding: the same message encrypts differently each time.
        let again = try RSAKeys.encrypt(message, modulus: key.modulus, publicExponent: key.publicExponent)
        #expect(again != cryptogram)
    }

    @Test func importedPartsMakeTheSameKey() throws {
        let key = try RSAKeys.generate(bits: 2048)
        let imported = try RSAKeys.privateKey(
            publicExponent: key.publicExponent, prime1: key.prime1.duplicate(),
            prime2: key.prime2.duplicate())
        #expect(imported.modulus == key.modulus)
    }

    @Test func cryptogramWithLeadingZerosStrippedDecrypts() throws {
        let key = try RSAKeys.privateKey(
            publicExponent: RSAKeys.defaultExponent, prime1: secret(RSAVector.prime1),
            prime2: secret(RSAVector.prime2))
        // About one cryptogram in 256 starts with 00: search until one does (64 tries found none 3 runs in 4,
        // and the test then checked nothing).
        while true {
            let message = SecureRandom.secret(32)
            let cryptogram = try RSAKeys.encrypt(message, modulus: key.modulus, publicExponent: key.publicExponent)
            guard cryptogram[0] == 0 else { continue }
            let stripped = Array(cryptogram.drop { $0 == 0 })
            #expect(try RSAKeys.decrypt(stripped, with: key).isEqual(to: message) == true)
            return
        }
    }

    @Test func smallModulusIsRefused() throws {
        let small = [UInt8](repeating: 0xFF, count: 128)  // 1024 bits
        let error = #expect(throws: CardCryptoError.self) {
            _ = try RSAKeys.encrypt(SecureRandom.secret(32), modulus: small, publicExponent: RSAKeys.defaultExponent)
        }
        #expect(error?.code == .keyTooSmall)
        let generation = #expect(throws: CardCryptoError.self) { _ = try RSAKeys.generate(bits: 1024) }
        #expect(generation?.code == .keyTooSmall)
    }

    @Test func evenExponentIsRefused() throws {
        let error = #expect(throws: CardCryptoError.self) {
            _ = try RSAKeys.encrypt(
                SecureRandom.secret(32), modulus: RSAVector.modulus, publicExponent: [0x01, 0x00, 0x00])
        }
        #expect(error?.code == .invalidKey)
    }

    @Test func overlongMessageIsRefused() throws {
        let error = #expect(throws: CardCryptoError.self) {
            _ = try RSAKeys.encrypt(
                SecureRandom.secret(246), modulus: RSAVector.modulus, publicExponent: RSAKeys.defaultExponent)
        }
        #expect(error?.code == .invalidLength)
    }

    /// Whether `cryptogram` deciphers under `key` to a PKCS#1 v1.5 encryption block (`00 02`, eight or more
    /// non-zero bytes, `00`); false for one not below the modulus.
    static func unpadsAsPKCS1(_ cryptogram: [UInt8], with key: borrowing RSAKeys.PrivateKey) -> Bool {
        guard let block = try? RSAKeys.rawPrivate(cryptogram, with: key) else { return false }
        let bytes = block.withUnsafeBytes { Array($0) }
        guard bytes.count > 11, bytes[0] == 0x00, bytes[1] == 0x02 else { return false }
        guard let separator = bytes[2...].firstIndex(of: 0x00) else { return false }
        return separator >= 10
    }

    @Test func wrongCryptogramsAreRefused() throws {
        let key = try RSAKeys.privateKey(
            publicExponent: RSAKeys.defaultExponent, prime1: secret(RSAVector.prime1),
            prime2: secret(RSAVector.prime2))
        let tooLong = #expect(throws: CardCryptoError.self) {
            _ = try RSAKeys.decrypt([0x01] + RSAVector.cryptogram, with: key)
        }
        #expect(tooLong?.code == .invalidLength)
        let empty = #expect(throws: CardCryptoError.self) { _ = try RSAKeys.decrypt([], with: key) }
        #expect(empty?.code == .invalidLength)
        var corrupted = RSAVector.cryptogram
        corrupted[100] ^= 0x01
        let garbled = #expect(throws: CardCryptoError.self) { _ = try RSAKeys.decrypt(corrupted, with: key) }
        #expect(garbled?.code == .decryptionFailed)
        // Another key's cryptogram; about one in 100,000 deciphers to valid padding under this key by chance, so
        // one that does not is chosen (the raw operation shows what decryption would unpad).
        let other = try RSAKeys.generate(bits: 2048)
        var foreign: [UInt8]
        repeat {
            foreign = try RSAKeys.encrypt(
                SecureRandom.secret(32), modulus: other.modulus, publicExponent: other.publicExponent)
        } while Self.unpadsAsPKCS1(foreign, with: key)
        let wrongKey = #expect(throws: CardCryptoError.self) { _ = try RSAKeys.decrypt(foreign, with: key) }
        #expect(wrongKey?.code == .decryptionFailed)
    }

    @Test func primesThatMakeNoKeyAreRefused() throws {
        let same = #expect(throws: CardCryptoError.self) {
            _ = try RSAKeys.privateKey(
                publicExponent: RSAKeys.defaultExponent, prime1: secret(RSAVector.prime1),
                prime2: secret(RSAVector.prime1))
        }
        #expect(same?.code == .invalidKey)
        let halves = #expect(throws: CardCryptoError.self) {
            _ = try RSAKeys.privateKey(
                publicExponent: RSAKeys.defaultExponent, prime1: secret(Array(RSAVector.prime1.prefix(64))),
                prime2: secret(Array(RSAVector.prime2.prefix(64))))
        }
        #expect(halves?.code == .keyTooSmall)
    }
}
