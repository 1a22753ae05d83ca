import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

/// A simulated card with a PIV application, a session on it, and the card-side set-up (management key,
/// key generation, PUT DATA) done with raw APDUs, as yubico-piv-tool would.
final class Card {
    let card: SimulatedCard
    let connection: SimulatedCardConnection
    let log = TraceLog()
    var trace: [String] { log.lines }
    /// A session that keeps the card alive (the connection holds it).
    var session: PIVSession {
        let log = self.log
        return PIVSession(connection: connection, trace: { log.lines.append($0) })
    }

    init(profile: SimulatedProfile = .yubikey) throws {
        card = try SimulatedCard(stateFile: nil, serial: 0x00C0_FFEE, profile: profile)
        connection = SimulatedCardConnection(card: card, sleep: { _ in })
    }

    func raw(_ ins: UInt8, _ p1: UInt8, _ p2: UInt8, _ data: [UInt8] = [], le: Int? = 256) throws -> ResponseAPDU {
        try connection.send(CommandAPDU(ins: ins, p1: p1, p2: p2, data: data, le: le))
    }

    /// SELECT, then mutual authentication with the default 3DES management key.
    func authenticateManagementKey() throws {
        try #require(try raw(0xA4, 0x04, 0x00, PIVApplicationID.selectAID).statusWord == .success)
        let key = guardedCopy(Array(1...8) + Array(1...8) + Array(1...8))
        let first = try raw(0x87, 0x03, 0x9B, Hex.decode("7C028000")!)
        let witness = try #require(try TLV.find(0x80, in: first.data)?.value)
        let decrypted = try BlockCiphers.decrypt(witness, key: key, algorithm: .tripleDES)
        let challenge = SecureRandom.bytes(8)
        let second = try raw(
            0x87, 0x03, 0x9B,
            TLV(tag: 0x7C, children: [TLV(tag: 0x80, value: decrypted), TLV(tag: 0x81, value: challenge)]).encoded)
        try #require(second.statusWord == .success)
    }

    /// Generates a key in `slot`; returns the public key template's content.
    func generate(_ slot: UInt8, _ algorithm: PIVAlgorithm) throws -> [UInt8] {
        try authenticateManagementKey()
        let response = try raw(
            0x47, 0x00, slot, TLV(tag: 0xAC, children: [TLV(tag: 0x80, value: [algorithm.rawValue])]).encoded)
        try #require(response.statusWord == .success)
        return try TLV.parseOne(response.data).value
    }

    func putObject(_ id: [UInt8], _ value: [UInt8]) throws {
        try authenticateManagementKey()
        let response = try raw(
            0xDB, 0x3F, 0xFF, TLV(tag: 0x5C, value: id).encoded + TLV(tag: 0x53, value: value).encoded, le: nil)
        try #require(response.statusWord == .success)
    }
}

final class TraceLog {
    var lines: [String] = []
}

func guardedCopy(_ bytes: [UInt8]) -> SecretBytes {
    var copy = bytes
    return SecretBytes(consuming: &copy)
}

func bytes(_ secret: borrowing SecretBytes) -> [UInt8] { secret.withUnsafeBytes { Array($0) } }

@Suite("PIVSession")
struct PIVSessionTests {
    @Test("SELECT finds PIV on a YubiKey and a PIV card, and reports a card without it")
    func select() throws {
        for profile in [SimulatedProfile.yubikey, .pivCard] {
            let card = try Card(profile: profile)
            let template = try card.session.select()
            #expect(try TLV.parseOne(template).tag == 0x61)
            #expect(try card.session.discovery().aid == PIVApplicationID.fullAID)
        }
        let openpgp = try Card(profile: .openpgp)
        #expect(throws: PIVError.applicationNotFound) { try openpgp.session.select() }
    }

    @Test("the CHUID's GUID names the card; a missing CHUID is objectNotFound")
    func chuid() throws {
        let card = try Card()
        try card.session.select()
        #expect(throws: PIVError.objectNotFound) { try card.session.chuid() }
        let guid = SecureRandom.bytes(16)
        try card.putObject(
            [0x5F, 0xC1, 0x02],
            TLV(tag: 0x30, value: [UInt8](repeating: 0xD4, count: 25)).encoded
                + TLV(tag: 0x34, value: guid).encoded + TLV(tag: 0x35, value: Array("20300101".utf8)).encoded
                + [0x3E, 0x00, 0xFE, 0x00])
        let chuid = try card.session.chuid()
        #expect(chuid.guid == guid)
        let issued = try Card(profile: .pivCard)
        try issued.session.select()
        #expect(try issued.session.chuid().guid.count == 16)
        #expect(chuid.fascn.count == 25)
        #expect(chuid.expiry == "20300101")
    }

    @Test("PIN: tries query, wrong PIN, verified, blocked; an over-long PIN is refused before the card")
    func pin() throws {
        let card = try Card()
        let session = card.session
        try session.select()
        #expect(try session.pinStatus() == .retriesLeft(3))
        #expect(throws: PIVError.invalidArgument("a PIV PIN has 1 to 8 bytes, not 9")) {
            try session.verify(pin: secret("123456789"))
        }
        #expect(throws: PIVError.invalidArgument("a PIV PIN has 1 to 8 bytes, not 0")) {
            try session.verify(pin: secret(""))
        }
        #expect(try session.pinStatus() == .retriesLeft(3))
        #expect(throws: PIVError.wrongPIN(retriesLeft: 2)) { try session.verify(pin: secret("654321")) }
        try session.verify(pin: secret("123456"))
        #expect(try session.pinStatus() == .verified)
        for left in [2, 1, 0] {
            #expect(throws: PIVError.wrongPIN(retriesLeft: left)) { try session.verify(pin: secret("000000")) }
        }
        #expect(throws: PIVError.blocked) { try session.verify(pin: secret("123456")) }
        #expect(try session.pinStatus() == .retriesLeft(0))
        // The trace never shows the PIN.
        #expect(!card.trace.contains { $0.contains("31 32 33 34 35 36") })
        #expect(card.trace.contains { $0.contains("00 20 00 80 [sensitive]") })
    }

    @Test("unblock with the PUK, change PIN and PUK")
    func unblockAndChange() throws {
        let session = try Card().session
        try session.select()
        for _ in 0..<3 { _ = try? session.verify(pin: secret("000000")) }
        #expect(throws: PIVError.wrongPIN(retriesLeft: 2)) {
            try session.unblockPIN(puk: secret("87654321"), newPIN: secret("24681357"))
        }
        try session.unblockPIN(puk: secret("12345678"), newPIN: secret("24681357"))
        try session.verify(pin: secret("24681357"))
        try session.changeReferenceData(current: secret("24681357"), new: secret("11223344"))
        try session.verify(pin: secret("11223344"))
        try session.changeReferenceData(puk: true, current: secret("12345678"), new: secret("99887766"))
        #expect(throws: PIVError.wrongPIN(retriesLeft: 2)) {
            try session.changeReferenceData(puk: true, current: secret("12345678"), new: secret("11111111"))
        }
        #expect(throws: PIVError.incorrectData) {
            try session.changeReferenceData(current: secret("11223344"), new: secret("123"))
        }
    }

    @Test("ECDH on P-256 in 9D and P-384 in a retired slot, the public key from YubiKey metadata")
    func ecdhWithMetadata() throws {
        let card = try Card()
        let session = card.session
        for (algorithm, curve, slot) in [
            (PIVAlgorithm.eccP256, WeierstrassCurve.nistP256, PIVSlot.keyManagement),
            (.eccP384, .nistP384, PIVSlot.retired(1)!),
        ] {
            let template = try card.generate(slot.rawValue, algorithm)
            try session.select()
            let publicKey = try session.publicKey(in: slot)
            #expect(publicKey == (try PIVPublicKey(templateContent: template, algorithm: algorithm)))
            guard case .ecc(let found, let point) = publicKey else {
                Issue.record("not an EC key")
                continue
            }
            #expect(found == algorithm)
            let host = try EllipticCurveDH.generateKeyPair(on: curve)
            #expect(throws: PIVError.securityStatusNotSatisfied) {
                _ = try session.sharedSecret(slot: slot, algorithm: algorithm, peerPoint: host.publicPoint)
            }
            try session.verify(pin: secret("123456"))
            let shared = try session.sharedSecret(slot: slot, algorithm: algorithm, peerPoint: host.publicPoint)
            let expected = try EllipticCurveDH.sharedSecret(privateKey: host.privateKey, peerPoint: point, on: curve)
            let equal = shared.isEqual(to: expected)
            #expect(equal)
            #expect(
                throws: PIVError.invalidArgument(
                    "a \(algorithm) point is 04 || x || y, \(host.publicPoint.count) bytes, not 3")
            ) {
                _ = try session.sharedSecret(slot: slot, algorithm: algorithm, peerPoint: [0x04, 0x01, 0x02])
            }
        }
        // The wrong algorithm for the key, and a slot without one.
        let host = try EllipticCurveDH.generateKeyPair(on: .nistP384)
        #expect(throws: PIVError.incorrectData) {
            _ = try session.sharedSecret(slot: .keyManagement, algorithm: .eccP384, peerPoint: host.publicPoint)
        }
        #expect(throws: PIVError.referencedDataNotFound) { try session.publicKey(in: .retired(20)!) }
        let point = try EllipticCurveDH.generateKeyPair(on: .nistP256).publicPoint
        #expect(throws: PIVError.referencedDataNotFound) {
            _ = try session.sharedSecret(slot: .retired(20)!, algorithm: .eccP256, peerPoint: point)
        }
    }

    @Test("a PIV card without metadata: the public key comes from the slot's certificate")
    func publicKeyFromCertificate() throws {
        let card = try Card(profile: .pivCard)
        let template = try card.generate(0x9D, .eccP256)
        let point = try #require(try TLV.find(0x86, in: template)?.value)
        let session = card.session
        try session.select()
        #expect(throws: PIVError.unsupported(.instructionNotSupported)) { try session.serial() }
        #expect(throws: PIVError.objectNotFound) { try session.publicKey(in: .keyManagement) }
        let der = certificate(spki: ecSPKI(point, curveOID: [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]))
        try card.putObject([0x5F, 0xC1, 0x0B], TLV(tag: 0x70, value: der).encoded + [0x71, 0x01, 0x00, 0xFE, 0x00])
        try session.select()
        #expect(try session.certificate(in: .keyManagement) == der)
        #expect(try session.publicKey(in: .keyManagement) == .ecc(algorithm: .eccP256, point: point))
        // A compressed certificate is refused with a clear reason.
        try card.putObject([0x5F, 0xC1, 0x0B], TLV(tag: 0x70, value: der).encoded + [0x71, 0x01, 0x01, 0xFE, 0x00])
        #expect(throws: PIVError.malformed(APDUError(.invalidStructure, "the certificate in slot 9D is compressed"))) {
            try session.certificate(in: .keyManagement)
        }
    }

    @Test("RSA 2048 decryption in 9D: the card's raw RSA, the padding removed by the session")
    func rsaDecrypt() throws {
        let card = try Card(profile: .pivCard)
        let template = try card.generate(0x9D, .rsa2048)
        let modulus = try #require(try TLV.find(0x81, in: template)?.value)
        let exponent = try #require(try TLV.find(0x82, in: template)?.value)
        try card.putObject(
            [0x5F, 0xC1, 0x0B],
            TLV(tag: 0x70, value: certificate(spki: rsaSPKI(modulus: modulus, exponent: exponent))).encoded)
        let session = card.session
        try session.select()
        let publicKey = try session.publicKey(in: .keyManagement)
        #expect(publicKey == .rsa(modulus: modulus, exponent: exponent))
        #expect(publicKey.algorithm == .rsa2048)
        try session.verify(pin: secret("123456"))
        let message = SecureRandom.bytes(32)
        let cryptogram = try RSAKeys.encrypt(guardedCopy(message), modulus: modulus, publicExponent: exponent)
        #expect(bytes(try session.decrypt(slot: .keyManagement, cryptogram: cryptogram)) == message)
        // A block that is not type-2 padded: decryptionFailed, not garbage.
        let typeOne = [0x00, 0x01] + [UInt8](repeating: 0xFF, count: 221) + [0x00] + message
        let forged = try RSAKeys.rawPublic(guardedCopy(typeOne), modulus: modulus, publicExponent: exponent)
        #expect(throws: PIVError.decryptionFailed) { _ = try session.decrypt(slot: .keyManagement, cryptogram: forged) }
        #expect(throws: PIVError.invalidArgument("an RSA cryptogram for this key has 256 bytes, not 255")) {
            _ = try session.decrypt(slot: .keyManagement, cryptogram: Array(cryptogram.dropFirst()))
        }
    }

    @Test("a malformed GENERAL AUTHENTICATE answer is malformed, and the PIN counter is untouched")
    func malformedAnswer() throws {
        let card = try Card()
        let template = try card.generate(0x9D, .eccP256)
        _ = template
        let session = card.session
        try session.select()
        try session.verify(pin: secret("123456"))
        let point = try EllipticCurveDH.generateKeyPair(on: .nistP256).publicPoint
        for answer in [
            "7C0382019990 00", "7C228220" + String(repeating: "00", count: 31) + "9000", "7C03810100 9000", "9000",
        ] {
            card.card.faults = CardFaults(rules: [
                .init(
                    instruction: 0x87, fault: .answer(Hex.decode(answer.replacingOccurrences(of: " ", with: ""))!),
                    times: 1)
            ])
            #expect("answer \(answer)") {
                _ = try session.sharedSecret(slot: .keyManagement, algorithm: .eccP256, peerPoint: point)
            } throws: { error in
                if case .malformed = error as? PIVError { true } else { false }
            }
            do {
                _ = try session.sharedSecret(slot: .keyManagement, algorithm: .eccP256, peerPoint: point)
            } catch {
                Issue.record("the fault applies once: \(error)")
            }
        }
        card.card.faults = CardFaults(rules: [
            .init(instruction: 0x87, fault: .answer([0x7C, 0x02, 0x82, 0x00, 0x90, 0x00]), times: 1)
        ])
        #expect(
            throws: PIVError.malformed(
                APDUError(.invalidStructure, "GENERAL AUTHENTICATE answered no 7C { 82 } template"))
        ) {
            _ = try session.sharedSecret(slot: .keyManagement, algorithm: .eccP256, peerPoint: point)
        }
        #expect(try session.pinStatus() == .verified)
        _ = try card.raw(0x20, 0xFF, 0x80, le: nil)
        #expect(try session.pinStatus() == .retriesLeft(3))
    }

    @Test("YubiKey version, serial and metadata")
    func yubiKey() throws {
        let card = try Card()
        let session = card.session
        try session.select()
        #expect(try session.version() == [5, 4, 3])
        #expect(try session.serial() == 0x00C0_FFEE)
        _ = try card.generate(0x9A, .eccP256)
        try session.select()
        let metadata = try session.metadata(for: .authentication)
        #expect(metadata.algorithm == .eccP256)
        #expect(metadata.generated)
        #expect(metadata.pinPolicy == 0x02)
    }

    @Test("certificate parsing refuses what is not an X.509 certificate with a PIV key")
    func certificateParsing() throws {
        #expect { try PIVPublicKey(certificate: [0x30, 0x00]) } throws: {
            ($0 as? APDUError)?.code == .invalidStructure
        }
        #expect {
            try PIVPublicKey(
                certificate: Array(
                    certificate(
                        spki: ecSPKI(
                            [0x04] + [UInt8](repeating: 1, count: 64), curveOID: [0x2B, 0x81, 0x04, 0x00, 0x23])
                    ).dropLast()))
        } throws: { ($0 as? APDUError)?.code == .truncated }
        // P-521 is not a PIV curve.
        #expect(throws: APDUError(.invalidStructure, "a curve PIV does not use")) {
            try PIVPublicKey(
                certificate: certificate(
                    spki: ecSPKI([0x04] + [UInt8](repeating: 1, count: 132), curveOID: [0x2B, 0x81, 0x04, 0x00, 0x23])))
        }
        let point = try EllipticCurveDH.generateKeyPair(on: .nistP384).publicPoint
        #expect(
            try PIVPublicKey(certificate: certificate(spki: ecSPKI(point, curveOID: [0x2B, 0x81, 0x04, 0x00, 0x22])))
                == .ecc(algorithm: .eccP384, point: point))
    }
}

@Suite("PIVSession management")
struct PIVManagementTests {
    static let defaultKey: [UInt8] = Array(1...8) + Array(1...8) + Array(1...8)

    @Test("the default 3DES management key authenticates; then GENERATE and PUT DATA work")
    func generateAndPut() throws {
        let card = try Card()
        let session = card.session
        try session.select()
        #expect(throws: PIVError.securityStatusNotSatisfied) {
            _ = try session.generateKey(in: .retired(3)!, algorithm: .eccP256)
        }
        let metadata = try session.managementKeyMetadata()
        #expect(metadata.algorithm == .tripleDES)
        #expect(metadata.isDefault)
        try session.authenticate(managementKey: guardedCopy(Self.defaultKey), algorithm: .tripleDES)
        let publicKey = try session.generateKey(in: .retired(3)!, algorithm: .eccP256, pinPolicy: 0x01)
        #expect(try session.publicKey(in: .retired(3)!) == publicKey)
        #expect(try session.metadata(for: .retired(3)!).pinPolicy == 0x01)
        let guid = SecureRandom.bytes(16)
        try session.putObject(PIVObjectID.chuid, value: TLV(tag: 0x34, value: guid).encoded)
        #expect(try session.chuid().guid == guid)
        // A certificate longer than one short APDU goes in chained.
        let long = TLV(tag: 0x70, value: SecureRandom.bytes(900)).encoded
        try session.putObject(PIVSlot.retired(3)!.certificateObject, value: long)
        #expect(try session.getObject(PIVSlot.retired(3)!.certificateObject) == long)
    }

    @Test("a wrong management key or algorithm is refused; a key of the wrong length never reaches the card")
    func wrongKey() throws {
        let card = try Card()
        let session = card.session
        try session.select()
        #expect(throws: PIVError.securityStatusNotSatisfied) {
            try session.authenticate(
                managementKey: guardedCopy([UInt8](repeating: 9, count: 24)), algorithm: .tripleDES)
        }
        #expect(throws: PIVError.invalidSlot) {
            try session.authenticate(managementKey: guardedCopy([UInt8](repeating: 9, count: 16)), algorithm: .aes128)
        }
        let before = card.card.processedCount
        #expect(throws: PIVError.invalidArgument("AES-256 management keys have 32 bytes, not 24")) {
            try session.authenticate(managementKey: guardedCopy(Self.defaultKey), algorithm: .aes256)
        }
        #expect(card.card.processedCount == before)
    }

    @Test("AES-192 management key, as on YubiKey firmware 5.7")
    func aesKey() throws {
        let card = try Card()
        let session = card.session
        try session.select()
        try session.authenticate(managementKey: guardedCopy(Self.defaultKey), algorithm: .tripleDES)
        let key = SecureRandom.bytes(24)
        #expect(try card.raw(0xFF, 0xFF, 0xFF, [0x0A, 0x9B, 24] + key, le: nil).statusWord == .success)
        #expect(try session.managementKeyMetadata().algorithm == .aes192)
        #expect(throws: PIVError.invalidSlot) {
            try session.authenticate(managementKey: guardedCopy(Self.defaultKey), algorithm: .tripleDES)
        }
        try session.authenticate(managementKey: guardedCopy(key), algorithm: .aes192)
    }
}

@Suite("PIVSession figures")
struct PIVFigureTests {
    /// The APDUs of a token verify, as the OpenPGP token does it: SELECT, identity, tries query, VERIFY,
    /// GENERAL AUTHENTICATE (target ≤ 5). RSA 2048 adds a chained command and a GET RESPONSE.
    @Test("a PIV token verify is 5 APDUs with ECDH, 7 with RSA 2048")
    func apduCount() throws {
        let card = try Card()
        let session = card.session
        try session.select()
        try session.authenticate(managementKey: guardedCopy(PIVManagementTests.defaultKey), algorithm: .tripleDES)
        guard case .ecc(_, let point) = try session.generateKey(in: .keyManagement, algorithm: .eccP256) else {
            Issue.record("not an EC key")
            return
        }
        _ = point
        guard case .rsa(let modulus, let exponent) = try session.generateKey(in: .retired(1)!, algorithm: .rsa2048)
        else {
            Issue.record("not an RSA key")
            return
        }
        let host = try EllipticCurveDH.generateKeyPair(on: .nistP256)
        card.card.powerOn()
        var before = card.card.processedCount
        try session.select()
        _ = try session.serial()
        #expect(try session.pinStatus() == .retriesLeft(3))
        try session.verify(pin: secret("123456"))
        _ = try session.sharedSecret(slot: .keyManagement, algorithm: .eccP256, peerPoint: host.publicPoint)
        #expect(card.card.processedCount - before == 5)

        let cryptogram = try RSAKeys.encrypt(
            guardedCopy(SecureRandom.bytes(32)), modulus: modulus, publicExponent: exponent)
        card.card.powerOn()
        before = card.card.processedCount
        try session.select()
        _ = try session.serial()
        _ = try session.pinStatus()
        try session.verify(pin: secret("123456"))
        _ = try session.decrypt(slot: .retired(1)!, cryptogram: cryptogram)
        #expect(card.card.processedCount - before == 7)
    }
}

@Suite("PIVSession against a hostile card")
struct PIVHostileCardTests {
    /// Every call meets answers of random bytes and status words (a fake or broken card): each returns or throws
    /// a `PIVError`, never traps.
    @Test("random answers to every session call give typed errors, never a crash")
    func randomAnswers() throws {
        let card = try Card()
        let session = card.session
        var generator = SystemRandomNumberGenerator()
        let statusWords: [[UInt8]] = [
            [0x90, 0x00], [0x61, 0x10], [0x63, 0xC1], [0x69, 0x82], [0x6A, 0x82], [0x6A, 0x80], [0x6C, 0x05],
        ]
        let point = try EllipticCurveDH.generateKeyPair(on: .nistP256).publicPoint
        func call(_ index: Int) throws(PIVError) {
            switch index {
            case 0: try session.select()
            case 1: _ = try session.discovery()
            case 2: _ = try session.chuid()
            case 3: _ = try session.certificate(in: .keyManagement)
            case 4: _ = try session.publicKey(in: .retired(2)!)
            case 5: _ = try session.pinStatus()
            case 6: try session.verify(pin: secret("123456"))
            case 7: _ = try session.sharedSecret(slot: .keyManagement, algorithm: .eccP256, peerPoint: point)
            case 8: _ = try session.decrypt(slot: .keyManagement, cryptogram: [UInt8](repeating: 1, count: 256))
            case 9: _ = try session.version()
            case 10: _ = try session.serial()
            case 11: _ = try session.metadata(for: .authentication)
            default: _ = try session.managementKeyMetadata()
            }
        }
        var outcomes = 0
        for round in 0..<1500 {
            let structured = TLV(
                tag: [0x7C, 0x53, 0x7E, 0x70, 0x30][round % 5],
                children: [
                    TLV(
                        tag: [0x82, 0x34, 0x4F, 0x01, 0x04][round % 5],
                        value: SecureRandom.bytes(Int.random(in: 0...70, using: &generator)))
                ])
            let body =
                round % 2 == 0 ? structured.encoded : SecureRandom.bytes(Int.random(in: 0...300, using: &generator))
            let answer = body + statusWords[Int.random(in: 0..<statusWords.count, using: &generator)]
            card.card.faults = CardFaults(rules: [
                .init(instruction: nil, fault: .answer(answer), times: Int.random(in: 1...3, using: &generator))
            ])
            do {
                try call(round % 13)
            } catch {
                _ = error.description
            }
            outcomes += 1
        }
        #expect(outcomes == 1500)
        card.card.faults = .none
        try session.select()
        #expect(try session.pinStatus() == .retriesLeft(3))
    }
}
