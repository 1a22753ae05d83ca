import Testing
import TokenpinAPDU
import TokenpinOpenPGP

/// Answers of real tokens, written by hand from the OpenPGP card 3.4.1 specification.
enum RecordedAnswers {
    /// GET DATA 6E of a YubiKey 5 (OpenPGP 3.4, serial 12345678): RSA 2048 signature and authentication
    /// keys, a cv25519 decryption key; 7F74 (general feature management), 7F66 (2048-byte buffers),
    /// attestation attributes (DA), key information (DE), touch policies (D6-D9). 275 bytes: longer than a
    /// short answer.
    static let yubiKey5 = Hex.decode(
        """
        6E82010F4F10D27600012401030400061234567800005F520800730000E00590007F74038101207F6608020208000202
        08007381DEC00A7D000BFE080000FF0000C106010800001100C20B122B060104019755010501C306010800001100DA06
        010800001100C407007F7F7F030003C53C101112131415161718191A1B1C1D1E1F20212223404142434445464748494A
        4B4C4D4E4F505152530000000000000000000000000000000000000000C63C0000000000000000000000000000000000
        00000000000000000000000000000000000000000000000000000000000000000000000000000000000000CD0C5F5E10
        0065A0B3C000000000DE080102020103008100D6020020D7020020D8020020D9020020
        """)!

    /// GET DATA 6E of a Nitrokey 3 (OpenPGP 3.4, serial A1B2C3D4): Ed25519 signature and authentication
    /// keys, cv25519 decryption key with import format FF; extended length without chaining.
    static let nitrokey3 = Hex.decode(
        """
        6E81F24F10D276000124010304000FA1B2C3D400005F520A0031F573C001600590007F660802020BFE02020BFE7381C5
        C00A7F000800000000FF0100C10A162B06010401DA470F01C20C122B060104019755010501FFC30A162B06010401DA47
        0F01C407017F7F7F030003C53C0102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F20212223
        2425262728292A2B2C2D2E2F303132333435363738393A3B3CC63C000000000000000000000000000000000000000000
        000000000000000000000000000000000000000000000000000000000000000000000000000000CD0C00000000000000
        0000000000
        """)!

    /// A cv25519 public key answer: 7F49 { 86 20 <32 bytes> }.
    static let cv25519PublicKey = Hex.decode(
        "7F4922862052C4E6B0D3F0E1C2A3B4958677685A4B3C2D1E0F00112233445566778899AABB")!
}

@Suite("Application related data")
struct ApplicationRelatedDataTests {
    @Test("a YubiKey 5")
    func yubiKey() throws {
        let data = try ApplicationRelatedData(parsing: RecordedAnswers.yubiKey5)
        #expect(data.aid.version == (3, 4))
        #expect(data.aid.manufacturer == 0x0006)
        #expect(data.aid.manufacturerName == "Yubico")
        #expect(data.aid.serial == 0x1234_5678)
        #expect(data.aid.serialString == "12345678")
        #expect(data.historicalBytes == Hex.decode("00 73 00 00 E0 05 90 00"))
        #expect(data.algorithmAttributes[.signature] == .rsa(modulusBits: 2048, exponentBits: 17, importFormat: 0))
        #expect(data.algorithmAttributes[.decryption] == .cv25519)
        #expect(data.algorithmAttributes[.authentication] == .rsa(modulusBits: 2048, exponentBits: 17, importFormat: 0))
        #expect(data.passwordStatus.retriesPW1 == 3)
        #expect(data.passwordStatus.retriesResetCode == 0)
        #expect(data.passwordStatus.retriesPW3 == 3)
        #expect(data.passwordStatus.maxLengthPW1 == 127)
        #expect(!data.passwordStatus.pw1ValidForSeveralSignatures)
        #expect(data.fingerprints[.signature] == Array(0x10...0x23))
        #expect(data.fingerprints[.decryption] == Array(0x40...0x53))
        #expect(data.fingerprints[.authentication] == nil)
        let capabilities = try #require(data.extendedCapabilities)
        #expect(capabilities.algorithmAttributesChangeable)
        #expect(capabilities.supportsKeyImport)
        #expect(data.extendedLengthInformation?.maxCommandBytes == 2048)
        let lengths = try #require(data.lengthCapabilities)
        #expect(lengths.extendedLength && lengths.commandChaining)
        #expect(lengths.maxCommandData == 2048 - 9)
        #expect(data.keyStatus[.signature] == .imported)
        #expect(data.keyStatus[.decryption] == .generated)
        #expect(data.keyStatus[.authentication] == .notPresent)
        #expect(data.hasCurve25519DecryptionKey)
        #expect(data.aid.description == "OpenPGP 3.4 Yubico serial 12345678")
    }

    @Test("a Nitrokey 3")
    func nitrokey() throws {
        let data = try ApplicationRelatedData(parsing: RecordedAnswers.nitrokey3)
        #expect(data.aid.manufacturerName == "Nitrokey")
        #expect(data.aid.serialString == "A1B2C3D4")
        #expect(data.algorithmAttributes[.signature] == .ed25519)
        #expect(data.algorithmAttributes[.decryption] == .ecdh(.curve25519, importFormat: 0xFF))
        #expect(data.algorithmAttributes[.decryption]?.isCurve25519ECDH == true)
        #expect(data.passwordStatus.pw1ValidForSeveralSignatures)
        #expect(data.fingerprints.count == 3)
        let lengths = try #require(data.lengthCapabilities)
        #expect(lengths.extendedLength && !lengths.commandChaining)
        #expect(data.hasCurve25519DecryptionKey)
    }

    @Test(
        "every prefix fails cleanly and trailing bytes are rejected",
        arguments: [RecordedAnswers.yubiKey5, RecordedAnswers.nitrokey3])
    func truncation(answer: [UInt8]) {
        for length in 0..<answer.count {
            #expect {
                try ApplicationRelatedData(parsing: Array(answer.prefix(length)))
            } throws: { ($0 as? APDUError)?.code == .truncated }
        }
        #expect {
            try ApplicationRelatedData(parsing: answer + [0x00])
        } throws: { ($0 as? APDUError)?.code == .trailingBytes }
    }

    /// Hostile answers: each must be an `APDUError` of the code given, never a crash or a half-parsed value.
    static let hostile: [(String, String, APDUError.Code)] = [
        ("wrong outer tag", "65 03 4F 01 00", .invalidTag),
        ("no AID", "6E 09 73 07 C4 05 00 7F 7F 7F 03", .truncated),
        ("AID of 15 bytes", "6E 11 4F 0F D2 76 00 01 24 01 03 04 00 06 12 34 56 78 00", .invalidLength),
        (
            "AID of another application", "6E 12 4F 10 A0 00 00 03 08 00 00 10 00 01 00 00 00 00 00 00",
            .invalidStructure
        ),
        ("indefinite length", "6E 80 4F 00 00 00", .invalidLength),
        ("length past the end", "6E 82 FF FF 4F 10", .truncated),
        ("five-byte length", "6E 85 00 00 00 00 10", .invalidLength),
        ("no PW status", "6E 12 4F 10 D2 76 00 01 24 01 03 04 00 06 12 34 56 78 00 00", .truncated),
        (
            "PW status of 6 bytes",
            "6E 1A 4F 10 D2 76 00 01 24 01 03 04 00 06 12 34 56 78 00 00 C4 06 00 7F 7F 7F 03 00",
            .invalidLength
        ),
        (
            "PW status of 8 bytes",
            "6E 1C 4F 10 D2 76 00 01 24 01 03 04 00 06 12 34 56 78 00 00 C4 08 00 7F 7F 7F 03 00 03 00",
            .invalidLength
        ),
        (
            "empty algorithm attributes",
            "6E 1D 4F 10 D2 76 00 01 24 01 03 04 00 06 12 34 56 78 00 00 C4 07 00 7F 7F 7F 03 00 03 C2 00",
            .truncated
        ),
        (
            "RSA attributes of 3 bytes",
            "6E 20 4F 10 D2 76 00 01 24 01 03 04 00 06 12 34 56 78 00 00 C4 07 00 7F 7F 7F 03 00 03 C1 03 01 08 00",
            .invalidLength
        ),
        (
            "fingerprints of 59 bytes",
            "6E 58 4F 10 D2 76 00 01 24 01 03 04 00 06 12 34 56 78 00 00 C4 07 00 7F 7F 7F 03 00 03 C5 3B"
                + String(repeating: " 11", count: 59),
            .invalidLength
        ),
        (
            "key information of odd length",
            "6E 20 4F 10 D2 76 00 01 24 01 03 04 00 06 12 34 56 78 00 00 C4 07 00 7F 7F 7F 03 00 03 DE 03 01 02 02",
            .invalidLength
        ),
        (
            "generation dates of 11 bytes",
            "6E 28 4F 10 D2 76 00 01 24 01 03 04 00 06 12 34 56 78 00 00 C4 07 00 7F 7F 7F 03 00 03 CD 0B"
                + String(repeating: " 11", count: 11),
            .invalidLength
        ),
        (
            "extended length information that is not two integers",
            "6E 20 4F 10 D2 76 00 01 24 01 03 04 00 06 12 34 56 78 00 00 C4 07 00 7F 7F 7F 03 00 03 7F 66 02 02 00",
            .invalidStructure
        ),
    ]

    @Test("hostile answers", arguments: hostile)
    func hostileAnswers(name: String, hex: String, code: APDUError.Code) throws {
        let bytes = try #require(Hex.decode(hex), "test vector \(name)")
        #expect("\(name)") { try ApplicationRelatedData(parsing: bytes) } throws: { ($0 as? APDUError)?.code == code }
    }

    @Test("random bytes never crash a parser")
    func random() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<2000 {
            var bytes = (0..<Int.random(in: 0..<80, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            // Half the time keep a plausible start so the parsers get past the first check.
            if round % 2 == 0, bytes.count > 4 {
                bytes[0] = 0x6E
                bytes[1] = UInt8(bytes.count - 2)
            }
            _ = try? ApplicationRelatedData(parsing: bytes)
            _ = try? CardPublicKey(parsing: bytes)
            _ = try? AlgorithmAttributes(parsing: bytes)
            _ = try? PasswordStatus(parsing: bytes)
            _ = try? ExtendedLengthInformation(parsing: bytes)
        }
        // Deep nesting: 200 constructed objects inside each other.
        var nested: [UInt8] = [0x4F, 0x00]
        for _ in 0..<100 { nested = TLV(tag: 0x73, value: nested).encoded }
        #expect {
            try ApplicationRelatedData(parsing: TLV(tag: 0x6E, value: nested).encoded)
        } throws: { ($0 as? APDUError)?.code == .tooDeep }
    }
}

@Suite("Data objects")
struct DataObjectTests {
    @Test(
        "algorithm attributes",
        arguments: [
            ("12 2B 06 01 04 01 97 55 01 05 01", AlgorithmAttributes.cv25519),
            ("12 2B 06 01 04 01 97 55 01 05 01 FF", .ecdh(.curve25519, importFormat: 0xFF)),
            ("16 2B 06 01 04 01 DA 47 0F 01", .ed25519),
            ("13 2A 86 48 CE 3D 03 01 07", .ecdsa(.nistP256, importFormat: nil)),
            ("12 2B 81 04 00 22", .ecdh(.nistP384, importFormat: nil)),
            ("01 08 00 00 20 00", .rsa(modulusBits: 2048, exponentBits: 32, importFormat: 0)),
            ("01 10 00 00 11", .rsa(modulusBits: 4096, exponentBits: 17, importFormat: nil)),
            ("42 01 02", .other([0x42, 0x01, 0x02])),
        ])
    func attributes(hex: String, expected: AlgorithmAttributes) throws {
        let bytes = try #require(Hex.decode(hex))
        let parsed = try AlgorithmAttributes(parsing: bytes)
        #expect(parsed == expected)
        #expect(parsed.encoded == bytes)
    }

    @Test(
        "names",
        arguments: [
            (AlgorithmAttributes.cv25519, "ECDH cv25519"), (.ed25519, "EdDSA ed25519"),
            (.rsa(modulusBits: 3072, exponentBits: 17, importFormat: nil), "rsa3072"),
        ])
    func names(attributes: AlgorithmAttributes, name: String) {
        #expect(attributes.description == name)
    }

    @Test(
        "malformed attributes",
        arguments: [
            ("", .truncated), ("01", .invalidLength), ("01 08 00", .invalidLength),
            ("01 08 00 00 11 00 00", .invalidLength), ("01 00 00 00 00", .invalidLength),
            ("12", .truncated), ("16", .truncated), ("12 2B 06 01 04 01 97 55 01 05 81", .invalidStructure),
            ("12 FF", .invalidStructure),
        ] as [(String, APDUError.Code)])
    func malformedAttributes(hex: String, code: APDUError.Code) {
        #expect { try AlgorithmAttributes(parsing: Hex.decode(hex) ?? []) } throws: { ($0 as? APDUError)?.code == code }
    }

    @Test("every prefix of the cv25519 attributes fails or reads as another algorithm")
    func attributePrefixes() {
        let full = AlgorithmAttributes.cv25519.encoded
        for length in 0..<full.count {
            if let parsed = try? AlgorithmAttributes(parsing: Array(full.prefix(length))) {
                #expect(parsed != .cv25519)
                #expect(!parsed.isCurve25519ECDH)
            }
        }
    }

    @Test("PW status: every other length fails")
    func passwordStatus() throws {
        let bytes: [UInt8] = [0x00, 0x7F, 0x7F, 0x7F, 0x02, 0x00, 0x03]
        let status = try PasswordStatus(parsing: bytes)
        #expect(status.retriesLeft(for: .pw1) == 2)
        #expect(status.retriesLeft(for: .pw1Signing) == 2)
        #expect(status.retriesLeft(for: .pw3) == 3)
        for length in 0..<bytes.count {
            #expect {
                try PasswordStatus(parsing: Array(bytes.prefix(length)))
            } throws: { ($0 as? APDUError)?.code == .invalidLength }
        }
        #expect { try PasswordStatus(parsing: bytes + [0]) } throws: { ($0 as? APDUError)?.code == .invalidLength }
    }

    @Test("application identifier: every prefix fails")
    func aidPrefixes() throws {
        let bytes = try #require(Hex.decode("D2760001240103040006123456780000"))
        _ = try ApplicationIdentifier(parsing: bytes)
        for length in 0..<bytes.count {
            #expect {
                try ApplicationIdentifier(parsing: Array(bytes.prefix(length)))
            } throws: { ($0 as? APDUError)?.code == .invalidLength }
        }
        #expect {
            try ApplicationIdentifier(parsing: bytes + [0])
        } throws: { ($0 as? APDUError)?.code == .invalidLength }
    }

    @Test("public keys: cv25519, the 40-prefixed form, RSA")
    func publicKeys() throws {
        let key = try CardPublicKey(parsing: RecordedAnswers.cv25519PublicKey)
        #expect(key.curve25519 == Array(RecordedAnswers.cv25519PublicKey.suffix(32)))
        let native = TLV(tag: 0x7F49, children: [TLV(tag: 0x86, value: [0x40] + Array(repeating: 7, count: 32))])
        #expect(try CardPublicKey(parsing: native.encoded).curve25519 == Array(repeating: 7, count: 32))
        let rsa = TLV(tag: 0x7F49, children: [TLV(tag: 0x81, value: [0xC5, 0x01]), TLV(tag: 0x82, value: [1, 0, 1])])
        #expect(try CardPublicKey(parsing: rsa.encoded) == .rsa(modulus: [0xC5, 0x01], exponent: [1, 0, 1]))
        #expect(try CardPublicKey(parsing: rsa.encoded).curve25519 == nil)
    }

    @Test("public keys: wrong-length points are not Curve25519 keys", arguments: [0, 1, 31, 33, 64, 65])
    func wrongLengthPoints(length: Int) throws {
        let template = TLV(tag: 0x7F49, children: [TLV(tag: 0x86, value: Array(repeating: 9, count: length))])
        if length == 0 {
            #expect {
                try CardPublicKey(parsing: template.encoded)
            } throws: { ($0 as? APDUError)?.code == .invalidLength }
        } else {
            #expect(try CardPublicKey(parsing: template.encoded).curve25519 == nil)
        }
    }

    @Test("public keys: every prefix fails, trailing bytes and other tags are rejected")
    func publicKeyPrefixes() {
        let bytes = RecordedAnswers.cv25519PublicKey
        for length in 0..<bytes.count {
            #expect {
                try CardPublicKey(parsing: Array(bytes.prefix(length)))
            } throws: { ($0 as? APDUError)?.code == .truncated }
        }
        #expect { try CardPublicKey(parsing: bytes + [0x90]) } throws: { ($0 as? APDUError)?.code == .trailingBytes }
        #expect {
            try CardPublicKey(parsing: TLV(tag: 0x7F48, value: []).encoded)
        } throws: { ($0 as? APDUError)?.code == .invalidTag }
        #expect {
            try CardPublicKey(parsing: TLV(tag: 0x7F49, value: [0x99, 0x00]).encoded)
        } throws: { ($0 as? APDUError)?.code == .invalidStructure }
    }

    @Test("extended length information: every prefix fails")
    func extendedLengthPrefixes() throws {
        let bytes = try #require(Hex.decode("02 02 08 00 02 02 08 00"))
        let info = try ExtendedLengthInformation(parsing: bytes)
        #expect(info.maxCommandBytes == 2048 && info.maxResponseBytes == 2048)
        for length in 0..<bytes.count {
            // Cut inside an integer's TLV: truncated; between them: not two integers.
            let code: APDUError.Code = length % 4 == 0 ? .invalidStructure : .truncated
            #expect {
                try ExtendedLengthInformation(parsing: Array(bytes.prefix(length)))
            } throws: { ($0 as? APDUError)?.code == code }
        }
    }
}

@Suite("Status words")
struct StatusWordMappingTests {
    static let table: [(UInt16, OpenPGPError?)] = [
        (0x9000, nil),
        (0x63C2, .wrongPIN(retriesLeft: 2)),
        (0x63C0, .wrongPIN(retriesLeft: 0)),
        (0x6983, .blocked),
        (0x6982, .securityStatusNotSatisfied),
        (0x6A88, .referencedDataNotFound),
        (0x6A82, .applicationNotFound),
        (0x6985, .wrongAlgorithm),
        (0x6A80, .incorrectData),
        (0x6D00, .unsupported(.instructionNotSupported)),
        (0x6E00, .unsupported(.classNotSupported)),
        (0x6A81, .unsupported(StatusWord(rawValue: 0x6A81))),
        (0x6884, .unsupported(.commandChainingNotSupported)),
        (0x6700, .unexpected(.wrongLength)),
        (0x6581, .unexpected(.memoryFailure)),
        (0x6F00, .unexpected(.noPreciseDiagnosis)),
        (0x1234, .unexpected(StatusWord(rawValue: 0x1234))),
    ]

    @Test("status words map to typed errors", arguments: table)
    func mapping(raw: UInt16, expected: OpenPGPError?) {
        #expect(OpenPGPError(statusWord: StatusWord(rawValue: raw)) == expected)
    }

    @Test("every error describes itself in plain words")
    func descriptions() {
        for (_, error) in Self.table {
            guard let error else { continue }
            #expect(!error.description.isEmpty)
        }
        #expect(OpenPGPError.wrongPIN(retriesLeft: 1).description == "wrong PIN, 1 tries left")
        #expect(OpenPGPError.blocked.description.contains("Reset Code"))
    }
}
