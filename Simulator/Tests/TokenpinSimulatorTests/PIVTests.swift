import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinTestSupport

@testable import TokenpinSimulator

/// Speaks PIV to a simulated card with the given profile.
final class PIVHarness {
    let card: SimulatedCard
    let connection: SimulatedCardConnection

    init(profile: SimulatedProfile = .yubikey, stateFile: String? = nil, select: Bool = true) throws {
        card = try SimulatedCard(stateFile: stateFile, serial: 0x0102_0304, profile: profile)
        connection = SimulatedCardConnection(card: card, sleep: { _ in })
        if select { try requireSuccess(self.select().statusWord) }
    }

    func send(_ ins: UInt8, _ p1: UInt8, _ p2: UInt8, _ data: [UInt8] = [], le: Int? = 256) throws -> ResponseAPDU {
        try connection.send(CommandAPDU(ins: ins, p1: p1, p2: p2, data: data, le: data.isEmpty && le == 256 ? nil : le))
    }

    func select(_ aid: [UInt8] = Array(PIVProfile.aid.prefix(5))) throws -> ResponseAPDU {
        try send(CardInstruction.select, 0x04, 0x00, aid)
    }

    static func padded(_ pin: String) -> [UInt8] {
        let bytes = Array(pin.utf8)
        return bytes + [UInt8](repeating: 0xFF, count: max(0, 8 - bytes.count))
    }

    func verify(_ pin: String?) throws -> StatusWord {
        try send(CardInstruction.verify, 0x00, 0x80, pin.map(Self.padded) ?? [], le: nil).statusWord
    }

    func getData(_ id: [UInt8]) throws -> ResponseAPDU {
        try send(PIVInstruction.getData, 0x3F, 0xFF, TLV(tag: 0x5C, value: id).encoded)
    }

    func putData(_ id: [UInt8], _ value: [UInt8]) throws -> StatusWord {
        try send(
            PIVInstruction.putData, 0x3F, 0xFF,
            TLV(tag: 0x5C, value: id).encoded + TLV(tag: 0x53, value: value).encoded,
            le: nil
        ).statusWord
    }

    /// Mutual authentication with the management key.
    func authenticate(key: [UInt8] = PIVProfile.defaultManagementKey, algorithm: BlockCiphers.Algorithm = .tripleDES)
        throws -> StatusWord
    {
        let first = try send(
            PIVInstruction.generalAuthenticate, algorithm.rawValue, 0x9B,
            TLV(tag: 0x7C, children: [TLV(tag: 0x80, value: [])]).encoded)
        guard first.statusWord == .success else { return first.statusWord }
        guard let witness = try TLV.find(0x80, in: first.data)?.value else { throw HarnessError("no witness") }
        let decrypted = try BlockCiphers.decrypt(witness, key: guardedCopy(key), algorithm: algorithm)
        let challenge = SecureRandom.bytes(algorithm.blockLength)
        let second = try send(
            PIVInstruction.generalAuthenticate, algorithm.rawValue, 0x9B,
            TLV(tag: 0x7C, children: [TLV(tag: 0x80, value: decrypted), TLV(tag: 0x81, value: challenge)]).encoded)
        guard second.statusWord == .success else { return second.statusWord }
        let expected = try BlockCiphers.encrypt(challenge, key: guardedCopy(key), algorithm: algorithm)
        guard try TLV.find(0x82, in: second.data)?.value == expected else {
            throw HarnessError("the card's answer is wrong")
        }
        return .success
    }

    func generate(_ slot: UInt8, _ algorithm: PIVKeyAlgorithm, pinPolicy: UInt8? = nil) throws -> ResponseAPDU {
        var children = [TLV(tag: 0x80, value: [algorithm.rawValue])]
        if let pinPolicy { children.append(TLV(tag: 0xAA, value: [pinPolicy])) }
        return try send(PIVInstruction.generateKeyPair, 0x00, slot, TLV(tag: 0xAC, children: children).encoded)
    }

    func authenticateWithKey(_ algorithm: PIVKeyAlgorithm, _ slot: UInt8, tag: UInt32, _ data: [UInt8]) throws
        -> ResponseAPDU
    {
        try send(
            PIVInstruction.generalAuthenticate, algorithm.rawValue, slot,
            TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: []), TLV(tag: tag, value: data)]).encoded)
    }
}

@Suite("PIV application")
struct PIVTests {
    @Test("SELECT with the 5-, 9- and 11-byte AID answers the property template")
    func select() throws {
        let harness = try PIVHarness(select: false)
        for length in [5, 9, 11] {
            let response = try harness.select(Array(PIVProfile.aid.prefix(length)))
            #expect(response.statusWord == .success)
            #expect(response.data == Hex.decode("61114F0600001000010079074F05A000000308"))
        }
        #expect(try harness.select([0xA0, 0x00, 0x00, 0x03]).statusWord == .fileNotFound)
    }

    @Test("a YubiKey profile carries both applications; SELECT picks one")
    func bothApplications() throws {
        let harness = try PIVHarness(profile: .yubikey, select: false)
        #expect(harness.card.atr == PIVProfile.yubiKeyATR)
        // OpenPGP first: its GET DATA works, PIV's does not.
        #expect(
            try harness.send(CardInstruction.select, 0x04, 0x00, CardProfile.applicationPrefix, le: nil).statusWord
                == .success)
        #expect(try harness.send(CardInstruction.getData, 0x00, 0x4F).statusWord == .success)
        #expect(try harness.getData([0x7E]).statusWord == .instructionNotSupported)
        // Then PIV: the OpenPGP verification is gone, PIV answers.
        try requireSuccess(harness.select().statusWord)
        #expect(try harness.getData([0x7E]).data == PIVProfile.discoveryObject)
        #expect(try harness.send(CardInstruction.getData, 0x00, 0x4F).statusWord == .instructionNotSupported)
    }

    @Test("a PIV card alone refuses the OpenPGP AID and has PIV selected from reset")
    func pivCardAlone() throws {
        let harness = try PIVHarness(profile: .pivCard, select: false)
        #expect(try harness.getData([0x7E]).statusWord == .success)
        #expect(
            try harness.send(CardInstruction.select, 0x04, 0x00, CardProfile.applicationPrefix, le: nil).statusWord
                == .fileNotFound)
        try requireSuccess(harness.select().statusWord)
        #expect(try harness.send(PIVInstruction.getVersion, 0, 0).statusWord == .instructionNotSupported)
    }

    @Test("a PIV card comes issued with a CHUID naming it by its own GUID; a YubiKey comes with none")
    func issuedCHUID() throws {
        let first = try PIVHarness(profile: .pivCard)
        let second = try PIVHarness(profile: .pivCard)
        let guids = try [first, second].map { harness in
            let chuid = try harness.getData([0x5F, 0xC1, 0x02])
            try requireSuccess(chuid.statusWord)
            return try TLV.find(0x34, in: TLV.parseOne(chuid.data).value)?.value
        }
        #expect(guids[0]?.count == 16)
        #expect(guids[0] != guids[1])
        #expect(try PIVHarness(profile: .yubikey).getData([0x5F, 0xC1, 0x02]).statusWord == .fileNotFound)
    }

    @Test("an OpenPGP card has no PIV application")
    func openPGPAlone() throws {
        let harness = try PIVHarness(profile: .openpgp, select: false)
        #expect(try harness.select().statusWord == .fileNotFound)
    }

    @Test("VERIFY: tries query, wrong PIN counts down, right PIN restores, blocked at zero")
    func verifyPIN() throws {
        let harness = try PIVHarness()
        #expect(try harness.verify(nil) == .wrongPIN(retriesLeft: 3))
        #expect(try harness.verify("654321") == .wrongPIN(retriesLeft: 2))
        #expect(try harness.verify(nil) == .wrongPIN(retriesLeft: 2))
        try requireSuccess(harness.verify("123456"))
        #expect(try harness.verify(nil) == .success)
        #expect(try harness.send(CardInstruction.verify, 0xFF, 0x80, le: nil).statusWord == .success)
        #expect(try harness.verify(nil) == .wrongPIN(retriesLeft: 3))
        for left in [2, 1, 0] { #expect(try harness.verify("000000") == .wrongPIN(retriesLeft: left)) }
        #expect(try harness.verify("123456") == .authenticationMethodBlocked)
        #expect(try harness.verify(nil) == .authenticationMethodBlocked)
        // Unpadded or long PINs are bad data, and cost nothing once blocked.
        #expect(
            try harness.send(CardInstruction.verify, 0x00, 0x81, PIVHarness.padded("12345678"), le: nil).statusWord
                == .referencedDataNotFound)
    }

    @Test("a PIN of the wrong length is refused before any try is spent")
    func verifyWrongLength() throws {
        let harness = try PIVHarness()
        #expect(
            try harness.send(CardInstruction.verify, 0x00, 0x80, Array("123456789".utf8), le: nil).statusWord
                == .incorrectData)
        #expect(try harness.verify(nil) == .wrongPIN(retriesLeft: 3))
    }

    @Test("CHANGE REFERENCE DATA for the PIN and the PUK; RESET RETRY COUNTER with the PUK")
    func changeAndUnblock() throws {
        let harness = try PIVHarness()
        let change = { (p2: UInt8, old: String, new: String) throws -> StatusWord in
            try harness.send(
                CardInstruction.changeReferenceData, 0x00, p2, PIVHarness.padded(old) + PIVHarness.padded(new), le: nil
            ).statusWord
        }
        #expect(try change(0x80, "000000", "24681357") == .wrongPIN(retriesLeft: 2))
        try requireSuccess(change(0x80, "123456", "24681357"))
        #expect(try harness.verify(nil) == .success)
        #expect(try change(0x80, "24681357", "12345") == .incorrectData)
        try requireSuccess(change(0x81, "12345678", "87654321"))
        for left in [2, 1, 0] { #expect(try harness.verify("999999") == .wrongPIN(retriesLeft: left)) }
        let unblock = { (puk: String, pin: String) throws -> StatusWord in
            try harness.send(
                CardInstruction.resetRetryCounter, 0x00, 0x80, PIVHarness.padded(puk) + PIVHarness.padded(pin), le: nil
            ).statusWord
        }
        #expect(try unblock("12345678", "111111") == .wrongPIN(retriesLeft: 2))
        try requireSuccess(unblock("87654321", "111111"))
        try requireSuccess(harness.verify("111111"))
        for left in [2, 1, 0] { #expect(try unblock("00000000", "222222") == .wrongPIN(retriesLeft: left)) }
        #expect(try unblock("87654321", "222222") == .authenticationMethodBlocked)
    }

    @Test("the management key: default 3DES, wrong key refused, AES-128/192/256 after SET MANAGEMENT KEY")
    func managementKey() throws {
        let harness = try PIVHarness()
        #expect(try harness.putData([0x5F, 0xC1, 0x02], [0x30, 0x00]) == .securityStatusNotSatisfied)
        #expect(try harness.authenticate(key: [UInt8](repeating: 7, count: 24)) == .securityStatusNotSatisfied)
        #expect(try harness.authenticate(algorithm: .aes192) == .incorrectP1P2)
        try requireSuccess(harness.authenticate())
        for algorithm in [BlockCiphers.Algorithm.aes128, .aes192, .aes256, .tripleDES] {
            let key = SecureRandom.bytes(algorithm.keyLength)
            try requireSuccess(
                harness.send(
                    PIVInstruction.setManagementKey, 0xFF, 0xFF,
                    [algorithm.rawValue, 0x9B, UInt8(key.count)] + key, le: nil
                ).statusWord)
            #expect(
                try harness.authenticate(key: [UInt8](repeating: 1, count: algorithm.keyLength), algorithm: algorithm)
                    == .securityStatusNotSatisfied)
            try requireSuccess(harness.authenticate(key: key, algorithm: algorithm))
            let metadata = try harness.send(PIVInstruction.getMetadata, 0x00, 0x9B)
            #expect(try TLV.find(0x01, in: metadata.data)?.value == [algorithm.rawValue])
            #expect(try TLV.find(0x05, in: metadata.data)?.value == [0x00])
        }
    }

    @Test("single-sided management key authentication")
    func singleSided() throws {
        let harness = try PIVHarness()
        let first = try harness.send(
            PIVInstruction.generalAuthenticate, 0x03, 0x9B,
            TLV(tag: 0x7C, children: [TLV(tag: 0x81, value: [])]).encoded)
        let challenge = try #require(try TLV.find(0x81, in: first.data)?.value)
        let answer = try BlockCiphers.encrypt(
            challenge, key: guardedCopy(PIVProfile.defaultManagementKey), algorithm: .tripleDES)
        try requireSuccess(
            harness.send(
                PIVInstruction.generalAuthenticate, 0x03, 0x9B,
                TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: answer)]).encoded
            ).statusWord)
        try requireSuccess(harness.putData([0x5F, 0xC1, 0x02], [0x30, 0x00]))
    }

    @Test("objects: PUT DATA then GET DATA; missing objects 6A82; PIN-protected objects 6982")
    func objects() throws {
        let harness = try PIVHarness()
        #expect(try harness.getData([0x5F, 0xC1, 0x02]).statusWord == .fileNotFound)
        try requireSuccess(harness.authenticate())
        let chuid = Hex.decode(
            "3019D4E739DA739CED39CE739D836858210842108421C84210C3EB34108899AABBCCDDEEFF00112233445566773508323033303031303130003E00FE00"
        )!
        try requireSuccess(harness.putData([0x5F, 0xC1, 0x02], chuid))
        #expect(try harness.getData([0x5F, 0xC1, 0x02]).data == TLV(tag: 0x53, value: chuid).encoded)
        // A certificate object longer than a short APDU: chained in, 61xx out.
        let certificate = TLV(tag: 0x70, value: SecureRandom.bytes(1200)).encoded + [0x71, 0x01, 0x00, 0xFE, 0x00]
        try requireSuccess(harness.putData([0x5F, 0xC1, 0x0B], certificate))
        #expect(try harness.getData([0x5F, 0xC1, 0x0B]).data == TLV(tag: 0x53, value: certificate).encoded)
        try requireSuccess(harness.putData([0x5F, 0xC1, 0x09], [0x01, 0x00]))
        #expect(try harness.getData([0x5F, 0xC1, 0x09]).statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify("123456"))
        #expect(try harness.getData([0x5F, 0xC1, 0x09]).statusWord == .success)
        try requireSuccess(harness.putData([0x5F, 0xC1, 0x0B], []))
        #expect(try harness.getData([0x5F, 0xC1, 0x0B]).statusWord == .fileNotFound)
        #expect(try harness.putData([0x7E], [0x00]) == .incorrectData)
    }

    @Test("GENERATE needs the management key, a key slot and a supported algorithm")
    func generateErrors() throws {
        let harness = try PIVHarness()
        #expect(try harness.generate(0x9D, .eccP256).statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.authenticate())
        #expect(try harness.generate(0x9B, .eccP256).statusWord == .wrongP1P2)
        #expect(try harness.generate(0x96, .eccP256).statusWord == .wrongP1P2)
        #expect(
            try harness.send(PIVInstruction.generateKeyPair, 0x00, 0x9D, Hex.decode("AC03800106")!).statusWord
                == .incorrectData)
    }

    @Test("ECDH on P-256 and P-384 in 9D and a retired slot gives the host's shared secret")
    func ecdh() throws {
        let harness = try PIVHarness()
        try requireSuccess(harness.authenticate())
        for (algorithm, curve, slot) in [
            (PIVKeyAlgorithm.eccP256, WeierstrassCurve.nistP256, UInt8(0x9D)),
            (.eccP384, .nistP384, 0x82), (.eccP256, .nistP256, 0x95),
        ] {
            let generated = try harness.generate(slot, algorithm)
            try requireSuccess(generated.statusWord)
            let cardPoint = try #require(try TLV.find(0x86, in: generated.data)?.value)
            #expect(cardPoint.count == 1 + 2 * curve.coordinateLength)
            let host = try EllipticCurveDH.generateKeyPair(on: curve)
            #expect(
                try harness.authenticateWithKey(algorithm, slot, tag: 0x85, host.publicPoint).statusWord
                    == .securityStatusNotSatisfied)
            try requireSuccess(harness.verify("123456"))
            let response = try harness.authenticateWithKey(algorithm, slot, tag: 0x85, host.publicPoint)
            try requireSuccess(response.statusWord)
            let expected = try EllipticCurveDH.sharedSecret(
                privateKey: host.privateKey, peerPoint: cardPoint, on: curve)
            #expect(try TLV.find(0x82, in: response.data)?.value == expected.withUnsafeBytes { Array($0) })
            // The wrong algorithm, a point off the curve, a slot without a key.
            #expect(
                try harness.authenticateWithKey(.rsa2048, slot, tag: 0x85, host.publicPoint).statusWord
                    == .incorrectData)
            var bad = host.publicPoint
            bad[bad.count - 1] ^= 1
            #expect(try harness.authenticateWithKey(algorithm, slot, tag: 0x85, bad).statusWord == .incorrectData)
            try requireSuccess(harness.send(CardInstruction.verify, 0xFF, 0x80, le: nil).statusWord)
        }
        #expect(
            try harness.authenticateWithKey(.eccP256, 0x9A, tag: 0x85, [0x04]).statusWord == .referencedDataNotFound)
    }

    @Test("ECDSA in 9E (PIN never) answers a DER signature the public key verifies")
    func ecdsa() throws {
        let harness = try PIVHarness()
        try requireSuccess(harness.authenticate())
        let generated = try harness.generate(0x9E, .eccP256)
        let point = try #require(try TLV.find(0x86, in: generated.data)?.value)
        let digest = SecureRandom.bytes(32)
        let response = try harness.authenticateWithKey(.eccP256, 0x9E, tag: 0x81, digest)
        try requireSuccess(response.statusWord)
        let der = try #require(try TLV.find(0x82, in: response.data)?.value)
        #expect(der.first == 0x30)
        #expect(try CardSignatures.ecdsaVerify(der: der, digest: digest, publicPoint: point, on: .nistP256))
    }

    @Test("RSA 2048: raw decryption of a padded block and a PIN-always signature in 9C")
    func rsa() throws {
        let harness = try PIVHarness()
        try requireSuccess(harness.authenticate())
        let generated = try harness.generate(0x9D, .rsa2048)
        try requireSuccess(generated.statusWord)
        let modulus = try #require(try TLV.find(0x81, in: generated.data)?.value)
        let exponent = try #require(try TLV.find(0x82, in: generated.data)?.value)
        let message = SecureRandom.bytes(32)
        let cryptogram = try RSAKeys.encrypt(guardedCopy(message), modulus: modulus, publicExponent: exponent)
        try requireSuccess(harness.verify("123456"))
        let response = try harness.authenticateWithKey(.rsa2048, 0x9D, tag: 0x81, cryptogram)
        try requireSuccess(response.statusWord)
        let block = try #require(try TLV.find(0x82, in: response.data)?.value)
        #expect(block.count == 256)
        #expect(Array(block.prefix(2)) == [0x00, 0x02])
        #expect(Array(block.suffix(32)) == message)
        #expect(
            try harness.authenticateWithKey(.rsa2048, 0x9D, tag: 0x81, Array(cryptogram.prefix(255))).statusWord
                == .incorrectData)

        try requireSuccess(harness.generate(0x9C, .rsa2048).statusWord)
        let block1 = [0x00, 0x01] + [UInt8](repeating: 0xFF, count: 256 - 3 - 32) + [0x00] + SecureRandom.bytes(32)
        try requireSuccess(harness.authenticateWithKey(.rsa2048, 0x9C, tag: 0x81, block1).statusWord)
        // PIN "always": the next signature needs the PIN again.
        #expect(
            try harness.authenticateWithKey(.rsa2048, 0x9C, tag: 0x81, block1).statusWord == .securityStatusNotSatisfied
        )
    }

    @Test("YubiKey extensions: version, serial, metadata, retries, reset")
    func yubiKeyExtensions() throws {
        let harness = try PIVHarness()
        #expect(try harness.send(PIVInstruction.getVersion, 0, 0).data == [5, 4, 3])
        #expect(try harness.send(PIVInstruction.getSerial, 0, 0).data == [1, 2, 3, 4])
        #expect(
            try harness.send(PIVInstruction.getMetadata, 0, 0x80).data
                == Hex.decode("0101FF0501010602 0303".replacingOccurrences(of: " ", with: "")))
        #expect(try harness.send(PIVInstruction.getMetadata, 0, 0x9D).statusWord == .referencedDataNotFound)
        try requireSuccess(harness.authenticate())
        let generated = try harness.generate(0x9D, .eccP384)
        let metadata = try harness.send(PIVInstruction.getMetadata, 0, 0x9D)
        #expect(try TLV.find(0x01, in: metadata.data)?.value == [0x14])
        #expect(try TLV.find(0x02, in: metadata.data)?.value == [0x02, 0x01])
        #expect(try TLV.find(0x03, in: metadata.data)?.value == [0x01])
        #expect(try TLV.find(0x04, in: metadata.data)?.value == TLV.parseOne(generated.data).value)
        // Retries need the PIN too; they reset PIN and PUK.
        #expect(try harness.send(PIVInstruction.setPINRetries, 5, 6, le: nil).statusWord == .securityStatusNotSatisfied)
        try requireSuccess(harness.verify("123456"))
        try requireSuccess(harness.send(PIVInstruction.setPINRetries, 5, 6, le: nil).statusWord)
        #expect(try harness.verify(nil) == .wrongPIN(retriesLeft: 5))
        // Reset only once PIN and PUK are blocked.
        #expect(try harness.send(PIVInstruction.reset, 0, 0, le: nil).statusWord == .conditionsOfUseNotSatisfied)
        for _ in 0..<5 { _ = try harness.verify("000000") }
        for _ in 0..<6 {
            _ = try harness.send(
                CardInstruction.resetRetryCounter, 0, 0x80, PIVHarness.padded("00000000") + PIVHarness.padded("000000"),
                le: nil)
        }
        try requireSuccess(harness.send(PIVInstruction.reset, 0, 0, le: nil).statusWord)
        #expect(try harness.verify(nil) == .wrongPIN(retriesLeft: 3))
        #expect(try harness.send(PIVInstruction.getMetadata, 0, 0x9D).statusWord == .referencedDataNotFound)
    }

    @Test("PIN counter, keys and objects persist in the state file beside the OpenPGP state")
    func persistence() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/card.json"
        let point: [UInt8]
        do {
            let first = try PIVHarness(stateFile: path)
            #expect(try first.verify("000000") == .wrongPIN(retriesLeft: 2))
            try requireSuccess(first.authenticate())
            point = try #require(try TLV.find(0x86, in: first.generate(0x9D, .eccP256).data)?.value)
            try requireSuccess(first.putData([0x5F, 0xC1, 0x02], [0x34, 0x01, 0x01]))
            // An OpenPGP write afterwards keeps the PIV part.
            try requireSuccess(
                first.send(CardInstruction.select, 0x04, 0x00, CardProfile.applicationPrefix, le: nil).statusWord)
            // The YubiKey 5 profile answers a wrong OpenPGP PIN with 6982, as YubiKeys do.
            #expect(
                try first.send(CardInstruction.verify, 0x00, 0x81, Array("000000".utf8), le: nil).statusWord
                    == .securityStatusNotSatisfied)
        }
        let second = try PIVHarness(stateFile: path)
        #expect(try second.verify(nil) == .wrongPIN(retriesLeft: 2))
        #expect(try second.getData([0x5F, 0xC1, 0x02]).data == [0x53, 0x03, 0x34, 0x01, 0x01])
        let metadata = try second.send(PIVInstruction.getMetadata, 0, 0x9D)
        #expect(try TLV.find(0x86, in: TLV.find(0x04, in: metadata.data)?.value ?? [])?.value == point)
        // The OpenPGP state file stays readable by an OpenPGP-only card.
        let openpgp = try Harness(card: SimulatedCard(stateFile: path))
        #expect(try openpgp.verify(0x81, "000000") == .wrongPIN(retriesLeft: 1))
    }
}

@Suite("PIV application robustness")
struct PIVRobustnessTests {
    @Test(
        "random commands for every PIV instruction never trap and always answer a status word",
        arguments: [SimulatedProfile.yubikey, .pivCard])
    func randomCommands(profile: SimulatedProfile) throws {
        let harness = try PIVHarness(profile: profile)
        let instructions: [UInt8] = [
            0xA4, 0xCB, 0xDB, 0x20, 0x24, 0x2C, 0x47, 0x87, 0xFD, 0xF8, 0xF7, 0xFF, 0xFA, 0xFB, 0xC0,
        ]
        var generator = SystemRandomNumberGenerator()
        try requireSuccess(harness.authenticate())
        for round in 0..<3000 {
            let ins = instructions[round % instructions.count]
            // Mostly well-formed templates with random contents, sometimes pure noise.
            var data: [UInt8]
            switch UInt8.random(in: 0...3, using: &generator) {
            case 0: data = SecureRandom.bytes(Int.random(in: 0...300, using: &generator))
            case 1:
                data =
                    TLV(
                        tag: 0x7C,
                        children: [
                            TLV(
                                tag: UInt32.random(in: 0x80...0x85, using: &generator),
                                value: SecureRandom.bytes(Int.random(in: 0...100, using: &generator)))
                        ]
                    ).encoded
            case 2:
                data =
                    TLV(tag: 0x5C, value: [0x5F, 0xC1, UInt8.random(in: 0...0x22, using: &generator)]).encoded
                    + TLV(tag: 0x53, value: SecureRandom.bytes(Int.random(in: 0...40, using: &generator))).encoded
            default:
                data =
                    TLV(tag: 0xAC, children: [TLV(tag: 0x80, value: [UInt8.random(in: 0...0x20, using: &generator)])])
                    .encoded
            }
            if ins == 0xFB || ins == 0xFA { data = [] }  // keep the card from resetting itself every time
            let slots: [UInt8] = [0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x82, 0x95, 0x80, 0x81, 0xFF, 0x00]
            var p1 = UInt8.random(in: 0...255, using: &generator)
            var p2 = slots[round % slots.count]
            switch ins {
            case 0x87: p1 = [0x03, 0x07, 0x11, 0x14, 0x0A][round % 5]
            case 0xCB, 0xDB: (p1, p2) = round % 7 == 0 ? (p1, p2) : (0x3F, 0xFF)
            case 0x47, 0xF7, 0x20, 0x24, 0x2C: p1 = round % 7 == 0 ? p1 : 0x00
            default: break
            }
            let response = harness.card.process(
                CommandAPDU(ins: ins, p1: p1, p2: p2, data: data, le: 256).encoded(extended: data.count > 255))
            #expect(response.count >= 2, "INS \(String(ins, radix: 16)) gave no status word")
            if round % 500 == 0 {
                try requireSuccess(harness.select().statusWord)
                try requireSuccess(harness.authenticate())
            }
        }
        // Still a working PIV card.
        try requireSuccess(harness.select().statusWord)
        #expect(try harness.getData([0x7E]).data == PIVProfile.discoveryObject)
    }
}
