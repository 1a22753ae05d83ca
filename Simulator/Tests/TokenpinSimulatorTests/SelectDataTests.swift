import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore

@testable import TokenpinSimulator

/// SELECT DATA and GET NEXT DATA for the cardholder certificate instances, and the algorithm information `FA`.
@Suite("SELECT DATA, GET NEXT DATA and FA")
struct SelectDataTests {
    /// `60 { 5C 7F21 }`, as OpenSC and gpg send it.
    static let certificatePath: [UInt8] = [0x60, 0x04, 0x5C, 0x02, 0x7F, 0x21]

    static func admin(_ profile: SimulatedProfile = .openpgp, stateFile: String? = nil) throws -> Harness {
        let harness = try Harness(card: SimulatedCard(stateFile: stateFile, serial: 0x1234_5678, profile: profile))
        try requireSuccess(harness.verify(0x83, "12345678"))
        return harness
    }

    static func selectData(_ harness: Harness, _ instance: UInt8, _ data: [UInt8] = certificatePath) throws
        -> StatusWord
    {
        try harness.send(CardInstruction.selectData, instance, 0x04, data).statusWord
    }

    static func certificate(_ instance: Int) -> [UInt8] { [0x30, 0x03, 0x02, 0x01, UInt8(instance)] }

    /// Writes a distinct certificate into each instance.
    static func writeAll(_ harness: Harness) throws {
        for instance in 0..<3 {
            try requireSuccess(selectData(harness, UInt8(instance)))
            try requireSuccess(harness.putData(0x7F21, certificate(instance)))
        }
    }

    @Test("SELECT DATA picks the instance GET DATA and PUT DATA 7F21 reach (0 AUT, 1 DEC, 2 SIG)")
    func instances() throws {
        let harness = try Self.admin()
        try Self.writeAll(harness)
        for instance in [2, 0, 1] {
            try requireSuccess(Self.selectData(harness, UInt8(instance)))
            #expect(try harness.getData(0x7F21).data == Self.certificate(instance))
        }
        // A new SELECT of the application starts again at the first instance.
        try requireSuccess(harness.select())
        #expect(try harness.getData(0x7F21).data == Self.certificate(0))
    }

    @Test("GET NEXT DATA walks the instances after GET DATA or SELECT DATA, 6985 before and past the last")
    func nextData() throws {
        let harness = try Self.admin()
        try Self.writeAll(harness)
        try requireSuccess(harness.select())
        let next = { try harness.send(CardInstruction.getNextData, 0x7F, 0x21, le: 256) }
        #expect(try next().statusWord == .conditionsOfUseNotSatisfied)
        #expect(try harness.getData(0x7F21).data == Self.certificate(0))
        #expect(try next().data == Self.certificate(1))
        #expect(try next().data == Self.certificate(2))
        #expect(try next().statusWord == .conditionsOfUseNotSatisfied)
        try requireSuccess(Self.selectData(harness, 1))
        #expect(try next().data == Self.certificate(2))
        #expect(
            try harness.send(CardInstruction.getNextData, 0x00, 0x5E, le: 256).statusWord == .referencedDataNotFound)
    }

    @Test(
        "SELECT DATA refuses a bad instance or P2 (6A86), a malformed path (6A80) and another data object (6A88)",
        arguments: [SimulatedProfile.openpgp, .yubikey, .nitrokey3, .gnuk])
    func refusals(profile: SimulatedProfile) throws {
        let harness = try Self.admin(profile)
        #expect(try Self.selectData(harness, 3) == .incorrectP1P2)
        #expect(
            try harness.send(CardInstruction.selectData, 0x00, 0x00, Self.certificatePath).statusWord == .incorrectP1P2)
        #expect(try Self.selectData(harness, 0, [0x60, 0x03, 0x5C, 0x01, 0x5E]) == .referencedDataNotFound)
        #expect(try Self.selectData(harness, 0, [0x61, 0x04, 0x5C, 0x02, 0x7F, 0x21]) == .incorrectData)
        // Every truncation of the path, and trailing bytes, fail cleanly.
        for length in 0..<Self.certificatePath.count {
            #expect(try Self.selectData(harness, 0, Array(Self.certificatePath.prefix(length))) == .incorrectData)
        }
        #expect(try Self.selectData(harness, 0, Self.certificatePath + [0x00]) == .incorrectData)
        // The instance stayed the first: nothing was selected by the failures.
        try requireSuccess(harness.putData(0x7F21, Self.certificate(7)))
        #expect(try harness.getData(0x7F21).data == Self.certificate(7))
    }

    @Test("a YubiKey (5.4.3) also takes the path with the leading length byte yubikit sends it; others do not")
    func yubiKeyLengthByte() throws {
        let prefixed = [UInt8(Self.certificatePath.count)] + Self.certificatePath
        let yubiKey = try Self.admin(.yubikey)
        try requireSuccess(Self.selectData(yubiKey, 1, prefixed))
        try requireSuccess(yubiKey.putData(0x7F21, Self.certificate(1)))
        try requireSuccess(Self.selectData(yubiKey, 1))
        #expect(try yubiKey.getData(0x7F21).data == Self.certificate(1))
        #expect(try Self.selectData(Self.admin(.nitrokey3), 1, prefixed) == .incorrectData)
    }

    @Test("the three certificates persist; a state file from before SELECT DATA loads with its one certificate first")
    func persistence() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sim-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.writeAll(Self.admin(stateFile: path))
        let reopened = try Self.admin(stateFile: path)
        for instance in 0..<3 {
            try requireSuccess(Self.selectData(reopened, UInt8(instance)))
            #expect(try reopened.getData(0x7F21).data == Self.certificate(instance))
        }
        var object = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        object["decryptionCertificate"] = nil
        object["signatureCertificate"] = nil
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        let old = try Self.admin(stateFile: path)
        #expect(try old.getData(0x7F21).data == Self.certificate(0))
        try requireSuccess(Self.selectData(old, 2))
        #expect(try old.getData(0x7F21).data == [])
    }

    // MARK: FA

    /// Attributes to try in every slot: each algorithm the simulator knows, in each role, and some it does not.
    static let candidates: [AlgorithmAttributes] = {
        var list = [2048, 3072, 4096, 1024].map { bits in
            AlgorithmAttributes(bytes: [0x01, UInt8(bits >> 8), UInt8(bits & 0xFF), 0x00, 0x11, 0x00])
        }
        for algorithm in [AlgorithmAttributes.ecdhAlgorithm, AlgorithmAttributes.ecdsaAlgorithm] {
            list += WeierstrassCurve.allCases.map { AlgorithmAttributes(bytes: [algorithm] + $0.oid) }
            list.append(AlgorithmAttributes(bytes: [algorithm] + AlgorithmAttributes.curve25519OID))
            list.append(AlgorithmAttributes(bytes: [algorithm, 0x2B, 0x81, 0x04, 0x00, 0x0A]))  // secp256k1
        }
        list += [
            .ed25519,
            AlgorithmAttributes(bytes: [AlgorithmAttributes.eddsaAlgorithm] + AlgorithmAttributes.curve25519OID),
        ]
        return list
    }()

    @Test(
        "FA lists, per slot, exactly the algorithms PUT DATA C1-C3 takes; none on the devices without FA",
        arguments: [SimulatedProfile.openpgp, .yubikey, .nitrokey3, .gnuk])
    func algorithmInformation(profile: SimulatedProfile) throws {
        let harness = try Self.admin(profile)
        let answer = try harness.getData(0xFA)
        guard profile == .yubikey || profile == .nitrokey3 else {
            #expect(answer.statusWord == .referencedDataNotFound)
            return
        }
        let entries = try TLV.parseOne(answer.data).children()
        #expect(entries.allSatisfy { [0xC1, 0xC2, 0xC3].contains($0.tag) })
        for slot in KeySlot.allCases {
            let listed = entries.filter { $0.tag == slot.attributesTag }.map(\.value)
            for attributes in Self.candidates {
                let accepted = try harness.putData(slot.attributesTag, attributes.bytes) == .success
                let inFA = listed.contains { AlgorithmAttributes(bytes: $0).kind == attributes.kind }
                #expect(
                    accepted == inFA, "\(slot) \(Hex.encode(attributes.bytes)): accepted \(accepted), in FA \(inFA)")
            }
            for bytes in listed {
                #expect(try harness.putData(slot.attributesTag, bytes) == .success, "\(slot) \(Hex.encode(bytes))")
            }
        }
        // NIST P-256 for gpg's key-attr menu: ECDSA for signing, ECDH for decryption.
        #expect(
            entries.contains { $0.tag == 0xC1 && $0.value == [0x13, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07] })
        #expect(
            entries.contains { $0.tag == 0xC2 && $0.value == [0x12, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07] })
        // RSA in the device's own exponent field (YubiKey 0011, Nitrokey 3 0020).
        let exponent: UInt8 = profile == .yubikey ? 0x11 : 0x20
        #expect(entries.contains { $0.tag == 0xC1 && $0.value == [0x01, 0x08, 0x00, 0x00, exponent, 0x00] })
    }
}
