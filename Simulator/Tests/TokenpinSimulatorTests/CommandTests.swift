import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore

@testable import TokenpinSimulator

/// One test group per OpenPGP command, each with its error status words. OpenPGP card 3.4.1, §7.2.
@Suite("OpenPGP commands")
struct CommandTests {
    // MARK: SELECT

    @Test("SELECT by full, partial and wrong AID (which keeps the application selected); MF select deselects")
    func select() throws {
        let harness = try Harness(select: false)
        #expect(harness.raw("00CA006E00").suffix(2) == [0x6D, 0x00])
        #expect(try harness.select() == .success)
        #expect(try harness.send(CardInstruction.select, 0x04, 0x00, harness.card.aid).statusWord == .success)
        #expect(
            try harness.send(CardInstruction.select, 0x04, 0x0C, [0xD2, 0x76, 0x00, 0x01, 0x24]).statusWord == .success)
        #expect(
            try harness.send(CardInstruction.select, 0x04, 0x00, [0xA0, 0x00, 0x00, 0x03, 0x08]).statusWord
                == .fileNotFound)
        #expect(try harness.getData(0x4F).statusWord == .success)
        #expect(try harness.send(CardInstruction.select, 0x00, 0x0C, [0x3F, 0x00]).statusWord == .success)
        #expect(try harness.getData(0x4F).statusWord == .instructionNotSupported)
        #expect(try harness.send(CardInstruction.select, 0x00, 0x0C, [0x2F, 0x02]).statusWord == .fileNotFound)
        #expect(try harness.send(CardInstruction.select, 0x07, 0x00, [0x3F, 0x00]).statusWord == .incorrectP1P2)
    }

    @Test("SELECT clears verified PINs")
    func selectClearsVerification() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x82, "123456"))
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord == .success)
        try requireSuccess(harness.select())
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord == .wrongPIN(retriesLeft: 3))
    }

    // MARK: GET DATA

    @Test("AID carries version, manufacturer and serial")
    func aid() throws {
        let harness = try Harness()
        let response = try harness.getData(0x4F)
        #expect(
            response.data == [
                0xD2, 0x76, 0x00, 0x01, 0x24, 0x01, 0x03, 0x04, 0xFF, 0xFE, 0x12, 0x34, 0x56, 0x78, 0x00, 0x00,
            ])
    }

    static let readableTags: [UInt32] = [
        0x4F, 0x5E, 0x65, 0x6E, 0x7A, 0xC4, 0x5F50, 0x5F52, 0x7F66, 0x7F74, 0x0101,
        0x0102, 0x5B, 0x5F2D, 0x5F35, 0xC5, 0xCD, 0xC0, 0xC1, 0xC2, 0xC3, 0xC6, 0xDE, 0x7F21,
    ]

    @Test("GET DATA answers every DO clients read", arguments: readableTags)
    func getData(tag: UInt32) throws {
        let harness = try Harness()
        #expect(try harness.getData(tag).statusWord == .success)
    }

    @Test("GET DATA of an unknown DO is 6A88; protected private DOs need their PIN")
    func getDataErrors() throws {
        let harness = try Harness()
        #expect(try harness.getData(0x00FF).statusWord == .referencedDataNotFound)
        #expect(try harness.getData(0x0103).statusWord == .securityStatusNotSatisfied)
        #expect(try harness.getData(0x0104).statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x82, "123456"))
        #expect(try harness.getData(0x0103).statusWord == .success)
        try requireSuccess(harness.verify(0x83, "12345678"))
        #expect(try harness.getData(0x0104).statusWord == .success)
    }

    @Test("factory-new: PW status 3 0 3, RSA 2048 attributes, no keys")
    func factoryState() throws {
        let harness = try Harness()
        #expect(try harness.getData(0xC4).data == [0x01, 0x7F, 0x7F, 0x7F, 0x03, 0x00, 0x03])
        #expect(try harness.getData(0xC2).data == [0x01, 0x08, 0x00, 0x00, 0x11, 0x00])
        #expect(try harness.getData(0xDE).data == [0x01, 0x00, 0x02, 0x00, 0x03, 0x00])
        #expect(try harness.getData(0xC5).data == [UInt8](repeating: 0, count: 60))
    }

    @Test("6E holds the AID, historical bytes, 7F66 and 73 with C0-C6, CD, DE")
    func applicationRelatedData() throws {
        let harness = try Harness()
        let response = try harness.getData(0x6E)
        let outer = try TLV.parseOne(response.data)
        #expect(outer.tag == 0x6E)
        for tag: UInt32 in [0x4F, 0x5F52, 0x7F66, 0x7F74, 0x73, 0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xCD, 0xDE] {
            #expect(try TLV.find(tag, in: response.data) != nil, "missing \(String(tag, radix: 16))")
        }
        #expect(try TLV.find(0x4F, in: response.data)?.value == harness.card.aid)
    }

    @Test("7F66 and 7F74 carry their outer tags; historical bytes announce chaining and extended length")
    func capabilityObjects() throws {
        let harness = try Harness()
        #expect(try harness.getData(0x7F66).data == [0x7F, 0x66, 0x08, 0x02, 0x02, 0x08, 0x00, 0x02, 0x02, 0x08, 0x00])
        #expect(try harness.getData(0x7F74).data == [0x7F, 0x74, 0x03, 0x81, 0x01, 0x20])
        let historical = try harness.getData(0x5F52).data
        #expect(historical == CardProfile.historicalBytes)
        let atr = harness.card.atr
        #expect(Array(atr.suffix(historical.count + 1).dropLast()) == historical)
        #expect(atr.dropFirst().reduce(0, ^) == 0, "TCK makes the XOR of T0...TCK zero")
    }

    // MARK: PUT DATA

    @Test("PUT DATA needs PW3 and writes name, language, URL, login data, C4, fingerprints, times")
    func putData() throws {
        let harness = try Harness()
        #expect(try harness.putData(0x5B, Array("Doe<<John".utf8)) == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x83, "12345678"))
        let writes: [(UInt32, [UInt8])] = [
            (0x5B, Array("Doe<<John".utf8)), (0x5F2D, Array("en".utf8)), (0x5F35, [0x39]),
            (0x5F50, Array("https://example.org/key".utf8)), (0x5E, Array("john".utf8)), (0x0102, [1, 2, 3]),
            (0xC7, [UInt8](repeating: 0xAA, count: 20)), (0xCF, [0x5F, 0x00, 0x00, 0x01]),
            (0xCB, [UInt8](repeating: 0xBB, count: 20)),
        ]
        for (tag, value) in writes {
            #expect(try harness.putData(tag, value) == .success)
            #expect(try harness.getData(tag).data == value)
        }
        #expect(try harness.putData(0xC4, [0x00]) == .success)
        #expect(try harness.getData(0xC4).data.first == 0x00)
        let related = try harness.getData(0x65).data
        #expect(try TLV.find(0x5B, in: related)?.value == Array("Doe<<John".utf8))
        #expect(try Array(harness.getData(0xC5).data[0..<20]) == [UInt8](repeating: 0xAA, count: 20))
    }

    @Test("PUT DATA errors: wrong length 6700, bad value 6A80, unknown or read-only DO 6A88")
    func putDataErrors() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        #expect(try harness.putData(0x5B, [UInt8](repeating: 0x41, count: 40)) == .wrongLength)
        #expect(try harness.putData(0xC7, [1, 2, 3]) == .wrongLength)
        #expect(try harness.putData(0xCE, [1, 2, 3]) == .wrongLength)
        #expect(try harness.putData(0xC4, [1, 2]) == .wrongLength)
        #expect(try harness.putData(0xC4, [0x05]) == .incorrectData)
        #expect(try harness.putData(0x5F35, [0x41]) == .incorrectData)
        #expect(try harness.putData(0xD3, [1, 2, 3]) == .wrongLength)
        #expect(try harness.putData(0x4F, [1, 2, 3]) == .referencedDataNotFound)
        #expect(try harness.putData(0x6E, [1, 2, 3]) == .referencedDataNotFound)
        // cv25519 only for decryption, Ed25519 only for signing and authentication, nothing unknown.
        #expect(try harness.putData(0xC1, AlgorithmAttributes.cv25519.bytes) == .incorrectData)
        #expect(try harness.putData(0xC2, AlgorithmAttributes.ed25519.bytes) == .incorrectData)
        #expect(try harness.putData(0xC2, [0x12, 0x2B, 0x81, 0x04]) == .incorrectData)
        #expect(try harness.putData(0xC1, AlgorithmAttributes.ed25519.bytes) == .success)
        #expect(try harness.putData(0xC2, AlgorithmAttributes.cv25519.bytes + [0xFF]) == .success)
    }

    @Test("private DOs 0101 and 0103 are written with PW1 (82)")
    func privateDOs() throws {
        let harness = try Harness()
        #expect(try harness.putData(0x0101, [9]) == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x82, "123456"))
        #expect(try harness.putData(0x0101, [9]) == .success)
        #expect(try harness.putData(0x0103, [8]) == .success)
        #expect(try harness.putData(0x0102, [7]) == .securityStatusNotSatisfied)
        #expect(try harness.getData(0x0101).data == [9])
        #expect(try harness.getData(0x0103).data == [8])
    }

    // MARK: VERIFY

    @Test("VERIFY: empty body queries, wrong PIN 63Cx and clears, blocked 6983, correct restores")
    func verify() throws {
        let harness = try Harness()
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x81).statusWord == .wrongPIN(retriesLeft: 3))
        #expect(try harness.verify(0x81, "123456") == .success)
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x81).statusWord == .success)
        #expect(try harness.verify(0x81, "654321") == .wrongPIN(retriesLeft: 2))
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x81).statusWord == .wrongPIN(retriesLeft: 2))
        #expect(try harness.verify(0x82, "123456") == .success)
        #expect(try harness.getData(0xC4).data[4] == 3)
        #expect(try harness.verify(0x82, "000000") == .wrongPIN(retriesLeft: 2))
        #expect(try harness.verify(0x82, "000000") == .wrongPIN(retriesLeft: 1))
        #expect(try harness.verify(0x82, "000000") == .wrongPIN(retriesLeft: 0))
        #expect(try harness.verify(0x82, "123456") == .authenticationMethodBlocked)
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord == .authenticationMethodBlocked)
        #expect(try harness.getData(0xC4).data.suffix(3) == [0, 0, 3])
    }

    @Test("VERIFY P1=FF resets the verified state; bad P1-P2 is 6A86")
    func verifyReset() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        #expect(try harness.send(CardInstruction.verify, 0xFF, 0x83).statusWord == .success)
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x83).statusWord == .wrongPIN(retriesLeft: 3))
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x84, [1, 2, 3, 4, 5, 6]).statusWord == .incorrectP1P2)
        #expect(try harness.send(CardInstruction.verify, 0x01, 0x81, [1, 2, 3, 4, 5, 6]).statusWord == .incorrectP1P2)
    }

    @Test("PW3 blocks independently of PW1")
    func pw3Blocks() throws {
        let harness = try Harness()
        for left in [2, 1, 0] { #expect(try harness.verify(0x83, "00000000") == .wrongPIN(retriesLeft: left)) }
        #expect(try harness.verify(0x83, "12345678") == .authenticationMethodBlocked)
        #expect(try harness.verify(0x82, "123456") == .success)
    }

    // MARK: CHANGE REFERENCE DATA

    @Test("CHANGE REFERENCE DATA for PW1 and PW3; wrong old PIN counts; short new PIN 6A80")
    func changeReferenceData() throws {
        let harness = try Harness()
        let change = { (p2: UInt8, old: String, new: String) throws -> StatusWord in
            try harness.send(CardInstruction.changeReferenceData, 0x00, p2, Array((old + new).utf8)).statusWord
        }
        #expect(try change(0x81, "123456", "24681357") == .success)
        #expect(try harness.verify(0x82, "123456") == .wrongPIN(retriesLeft: 2))
        #expect(try harness.verify(0x82, "24681357") == .success)
        #expect(try change(0x81, "999999", "11111111") == .wrongPIN(retriesLeft: 2))
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord == .wrongPIN(retriesLeft: 2))
        #expect(try change(0x81, "24681357", "123") == .incorrectData)
        #expect(try harness.verify(0x82, "24681357") == .success)
        #expect(try change(0x83, "12345678", "87654321") == .success)
        #expect(try harness.verify(0x83, "87654321") == .success)
        #expect(try change(0x82, "24681357", "11111111") == .incorrectP1P2)
        #expect(try harness.send(CardInstruction.changeReferenceData, 0x00, 0x81).statusWord == .wrongLength)
    }

    // MARK: RESET RETRY COUNTER

    @Test("RESET RETRY COUNTER with the Reset Code and after PW3")
    func resetRetryCounter() throws {
        let harness = try Harness()
        for _ in 0..<3 { _ = try harness.verify(0x82, "000000") }
        #expect(try harness.verify(0x82, "123456") == .authenticationMethodBlocked)
        // No Reset Code set: its counter is 0.
        #expect(
            try harness.send(CardInstruction.resetRetryCounter, 0x00, 0x81, Array("12345678654321".utf8)).statusWord
                == .authenticationMethodBlocked)
        #expect(
            try harness.send(CardInstruction.resetRetryCounter, 0x02, 0x81, Array("654321".utf8)).statusWord
                == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x83, "12345678"))
        #expect(
            try harness.send(CardInstruction.resetRetryCounter, 0x02, 0x81, Array("123".utf8)).statusWord
                == .incorrectData)
        #expect(
            try harness.send(CardInstruction.resetRetryCounter, 0x02, 0x81, Array("654321".utf8)).statusWord == .success
        )
        #expect(try harness.verify(0x82, "654321") == .success)
        #expect(try harness.putData(0xD3, Array("RESETME1".utf8)) == .success)
        #expect(try harness.getData(0xC4).data.suffix(3) == [3, 3, 3])
        try requireSuccess(harness.select())
        let withCode = { (code: String, pin: String) throws -> StatusWord in
            try harness.send(CardInstruction.resetRetryCounter, 0x00, 0x81, Array((code + pin).utf8)).statusWord
        }
        #expect(try withCode("WRONGONE", "777777") == .wrongPIN(retriesLeft: 2))
        #expect(try withCode("RESETME1", "777777") == .success)
        #expect(try harness.verify(0x82, "777777") == .success)
        #expect(try harness.getData(0xC4).data.suffix(3) == [3, 3, 3])
        #expect(try harness.send(CardInstruction.resetRetryCounter, 0x01, 0x81, [1]).statusWord == .incorrectP1P2)
    }

    // MARK: GENERATE ASYMMETRIC KEY PAIR

    @Test("generation needs PW3, is gated by the attributes, and the public key reads back")
    func generate() throws {
        let harness = try Harness()
        #expect(try harness.generate(.decryption).statusWord == .securityStatusNotSatisfied)
        #expect(try harness.readPublicKey(.decryption).statusWord == .referencedDataNotFound)
        try requireSuccess(harness.verify(0x83, "12345678"))
        // Factory attributes are RSA 2048: the card answers the modulus and exponent.
        let rsa = try harness.generate(.decryption)
        #expect(rsa.statusWord == .success)
        #expect(try TLV.find(0x81, in: rsa.data)?.value.count == 256)
        let publicKey = try harness.makeCurve25519DecryptionKey()
        #expect(publicKey.count == 32)
        let read = try harness.readPublicKey(.decryption)
        #expect(try harness.publicKey(in: read.data) == publicKey)
        #expect(read.data.prefix(2) == [0x7F, 0x49])
        #expect(try harness.getData(0xDE).data == [0x01, 0x00, 0x02, 0x01, 0x03, 0x00])
        #expect(
            try harness.send(CardInstruction.generateKeyPair, 0x80, 0x00, [0xB7, 0x00]).statusWord == .incorrectData)
        #expect(
            try harness.send(CardInstruction.generateKeyPair, 0x82, 0x00, [0xB8, 0x00]).statusWord == .incorrectP1P2)
        #expect(try harness.send(CardInstruction.generateKeyPair, 0x80, 0x00).statusWord == .incorrectData)
    }

    @Test("changing the attributes deletes the key")
    func attributeChangeDeletesKey() throws {
        let harness = try Harness()
        _ = try harness.makeCurve25519DecryptionKey()
        #expect(try harness.putData(0xC2, AlgorithmAttributes.rsa2048.bytes) == .success)
        #expect(try harness.readPublicKey(.decryption).statusWord == .referencedDataNotFound)
    }

    // MARK: PSO:DECIPHER

    @Test("DECIPHER with cv25519: raw and 40-prefixed points give the host's shared secret")
    func decipher() throws {
        let harness = try Harness()
        let cardPublic = try harness.makeCurve25519DecryptionKey()
        let host = try hostKeyPair()
        let expected = try sharedSecret(host.secret, cardPublic)
        #expect(try harness.decipher(host.publicKey).statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x82, "123456"))
        #expect(try harness.decipher(host.publicKey).data == expected)
        #expect(try harness.decipher([0x40] + host.publicKey).data == expected)
        // PW1 (82) stays verified for several operations.
        #expect(try harness.decipher(host.publicKey).data == expected)
    }

    @Test("DECIPHER errors: wrong template 6A80, low-order point 6A80, no key 6A88, wrong key type 6A81")
    func decipherErrors() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x82, "123456"))
        #expect(try harness.decipher(SecureRandom.bytes(32)).statusWord == .referencedDataNotFound)
        _ = try harness.makeCurve25519DecryptionKey()
        #expect(try harness.decipher(SecureRandom.bytes(31)).statusWord == .incorrectData)
        #expect(try harness.decipher([UInt8](repeating: 0, count: 32)).statusWord == .incorrectData)
        #expect(
            try harness.send(
                CardInstruction.performSecurityOperation, 0x80, 0x86, [0xA6, 0x05, 0x7F, 0x49, 0x02, 0x86, 0x00]
            ).statusWord
                == .incorrectData)
        #expect(
            try harness.send(CardInstruction.performSecurityOperation, 0x80, 0x86, [0x00, 0x01, 0x02]).statusWord
                == .incorrectData)
        #expect(
            try harness.send(CardInstruction.performSecurityOperation, 0x86, 0x80, [0x00]).statusWord == .incorrectP1P2)
    }

    @Test("reset and power-off cancel PW1 (82)")
    func resetCancelsVerification() throws {
        let harness = try Harness()
        let cardPublic = try harness.makeCurve25519DecryptionKey()
        _ = cardPublic
        let host = try hostKeyPair()
        try requireSuccess(harness.verify(0x82, "123456"))
        harness.card.reset()
        try requireSuccess(harness.select())
        #expect(try harness.decipher(host.publicKey).statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x82, "123456"))
        harness.card.powerOff()
        harness.card.powerOn()
        try requireSuccess(harness.select())
        #expect(try harness.decipher(host.publicKey).statusWord == .securityStatusNotSatisfied)
    }

    // MARK: PSO:CDS and INTERNAL AUTHENTICATE

    @Test("Ed25519 signature: PW1 (81) valid for one signature when C4 says so; counter in 7A")
    func computeSignature() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        try requireSuccess(harness.putData(0xC1, AlgorithmAttributes.ed25519.bytes))
        let publicKey = try harness.publicKey(in: harness.generate(.signature).data)
        try requireSuccess(harness.putData(0xC4, [0x00]))
        let digest = SecureRandom.bytes(32)
        let sign = { try harness.send(CardInstruction.performSecurityOperation, 0x9E, 0x9A, digest, le: 256) }
        #expect(try sign().statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x81, "123456"))
        let signature = try sign()
        #expect(signature.statusWord == .success)
        #expect(Ed25519.isValidSignature(signature.data, for: digest, publicKey: publicKey))
        #expect(try sign().statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.putData(0xC4, [0x01]))
        try requireSuccess(harness.verify(0x81, "123456"))
        #expect(try sign().statusWord == .success)
        #expect(try sign().statusWord == .success)
        #expect(try TLV.find(0x93, in: harness.getData(0x7A).data)?.value == [0, 0, 3])
    }

    @Test("INTERNAL AUTHENTICATE with Ed25519 needs PW1 (82)")
    func internalAuthenticate() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        let challenge = SecureRandom.bytes(40)
        let authenticate = { try harness.send(CardInstruction.internalAuthenticate, 0x00, 0x00, challenge, le: 256) }
        #expect(try authenticate().statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x82, "123456"))
        #expect(try authenticate().statusWord == .referencedDataNotFound)
        try requireSuccess(harness.putData(0xC3, AlgorithmAttributes.ed25519.bytes))
        let publicKey = try harness.publicKey(in: harness.generate(.authentication).data)
        let signature = try authenticate()
        #expect(Ed25519.isValidSignature(signature.data, for: challenge, publicKey: publicKey))
        #expect(try harness.send(CardInstruction.internalAuthenticate, 0x00, 0x00).statusWord == .wrongLength)
    }

    // MARK: Key import

    /// An extended header list for an ECC private key, as gpg builds it.
    static func importCommand(slot: KeySlot, secret: [UInt8]) -> [UInt8] {
        let template: [UInt8] = [0x92] + TLV.encodeLength(secret.count)
        let header = TLV(
            tag: 0x4D,
            children: [
                TLV(tag: UInt32(slot.crtTag), value: []),
                TLV(tag: 0x7F48, value: template), TLV(tag: 0x5F48, value: secret),
            ])
        return header.encoded
    }

    @Test("import: a big-endian cv25519 scalar from gpg is stored in RFC 7748 order")
    func importCurve25519() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        try requireSuccess(harness.putData(0xC2, AlgorithmAttributes.cv25519.bytes))
        let card = try hostKeyPair()
        let bigEndian = Array(card.secret.reversed())
        let command = CommandAPDU(
            ins: CardInstruction.putDataOdd, p1: 0x3F, p2: 0xFF,
            data: Self.importCommand(slot: .decryption, secret: bigEndian))
        #expect(try harness.send(command).statusWord == .success)
        #expect(try harness.publicKey(in: harness.readPublicKey(.decryption).data) == card.publicKey)
        #expect(try harness.getData(0xDE).data[3] == 0x02)
    }

    @Test("import: Ed25519 seed; errors for bad structure, missing PW3, an RSA slot given only a scalar")
    func importErrors() throws {
        let harness = try Harness()
        let seed = SecureRandom.bytes(32)
        let data = Self.importCommand(slot: .signature, secret: seed)
        let command = CommandAPDU(ins: CardInstruction.putDataOdd, p1: 0x3F, p2: 0xFF, data: data)
        #expect(try harness.send(command).statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify(0x83, "12345678"))
        #expect(try harness.send(command).statusWord == .incorrectData)
        try requireSuccess(harness.putData(0xC1, AlgorithmAttributes.ed25519.bytes))
        #expect(try harness.send(command).statusWord == .success)
        #expect(
            try harness.publicKey(in: harness.readPublicKey(.signature).data)
                == Ed25519.publicKey(forSeed: guardedCopy(seed)))
        for cut in [1, 5, data.count - 1] {
            let broken = CommandAPDU(ins: CardInstruction.putDataOdd, p1: 0x3F, p2: 0xFF, data: Array(data.prefix(cut)))
            #expect(try harness.send(broken).statusWord == .incorrectData)
        }
        #expect(try harness.send(CardInstruction.putDataOdd, 0x3F, 0xFE, data).statusWord == .incorrectP1P2)
    }

    // MARK: GET CHALLENGE, TERMINATE, ACTIVATE, unknown

    @Test("GET CHALLENGE returns Le random bytes")
    func getChallenge() throws {
        let harness = try Harness()
        let first = try harness.send(CardInstruction.getChallenge, 0, 0, le: 16)
        let second = try harness.send(CardInstruction.getChallenge, 0, 0, le: 16)
        #expect(first.data.count == 16 && first.data != second.data)
        #expect(try harness.send(CardInstruction.getChallenge, 0, 0).statusWord == .wrongLength)
        #expect(try harness.send(CardInstruction.getChallenge, 1, 0, le: 8).statusWord == .incorrectP1P2)
        #expect(try harness.send(CardInstruction.getChallenge, 0, 0, le: 4096).statusWord == .wrongLength)
    }

    @Test("TERMINATE DF then ACTIVATE FILE makes the card factory-new, keeping the serial")
    func terminateActivate() throws {
        let harness = try Harness()
        _ = try harness.makeCurve25519DecryptionKey()
        try requireSuccess(harness.putData(0x5B, Array("Name".utf8)))
        try requireSuccess(harness.select())
        #expect(try harness.send(CardInstruction.terminateDF, 0, 0).statusWord == .securityStatusNotSatisfied)
        for _ in 0..<3 { _ = try harness.verify(0x83, "00000000") }
        // A blocked PW3 allows TERMINATE without it.
        #expect(try harness.send(CardInstruction.terminateDF, 0, 0).statusWord == .success)
        #expect(try harness.getData(0x4F).statusWord == .selectedFileTerminated)
        #expect(try harness.select() == .selectedFileTerminated)
        #expect(try harness.send(CardInstruction.activateFile, 0, 0).statusWord == .success)
        #expect(try harness.select() == .success)
        #expect(try harness.getData(0x5B).data == [])
        #expect(try harness.getData(0xC4).data.suffix(3) == [3, 0, 3])
        #expect(try harness.readPublicKey(.decryption).statusWord == .referencedDataNotFound)
        #expect(harness.card.serial == 0x1234_5678)
        #expect(try harness.send(CardInstruction.activateFile, 0, 0).statusWord == .success)
    }

    @Test("unknown instruction 6D00; unsupported class bits 6E00, 6881, 6882")
    func unknownCommands() throws {
        let harness = try Harness()
        #expect(harness.raw("00FE0000") == [0x6D, 0x00])
        #expect(harness.raw("80CA006E00") == [0x6E, 0x00])
        #expect(harness.raw("01CA006E00") == [0x68, 0x81])
        #expect(harness.raw("0CCA006E00") == [0x68, 0x82])
        #expect(harness.raw("40CA006E00") == [0x6E, 0x00])
    }
}

/// The simulated card drops a verified PIN on VERIFY P1 = `FF`, as YubiKey 5.6+ and OpenPGP card 3.x do, so
/// a connection can leave the card instead of resetting it.
@Suite struct ClearVerifiedStateTests {
    @Test("00 20 FF 82 clears PW1 for decipher: PSO:DECIPHER is 6982 again, without a reset")
    func clearsThroughVerifiedState() throws {
        let harness = try Harness()
        let point = try harness.makeCurve25519DecryptionKey()
        var state = VerifiedState()
        let verify = [0x00, 0x20, 0x00, 0x82, 0x06] + Array("123456".utf8)
        state.note(command: verify, answer: try harness.connection.transmit(verify))
        #expect(try harness.decipher(point).statusWord == .success)
        #expect(state.clear { command throws(CardTransportError) in try harness.connection.transmit(command) })
        #expect(state.isEmpty)
        // Still selected (no reset happened), but no longer verified.
        #expect(try harness.decipher(point).statusWord == .securityStatusNotSatisfied)
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord == .wrongPIN(retriesLeft: 3))
    }

    @Test(
        "FF VERIFY with data is a wrong length; on an unknown reference it is 6A86",
        arguments: [
            ("00 20 FF 82 01 00", StatusWord.wrongLength), ("00 20 FF 84", StatusWord.incorrectP1P2),
        ])
    func malformedClear(hex: String, expected: StatusWord) throws {
        let harness = try Harness()
        #expect(try ResponseAPDU(parsing: harness.raw(hex)).statusWord == expected)
    }
}
