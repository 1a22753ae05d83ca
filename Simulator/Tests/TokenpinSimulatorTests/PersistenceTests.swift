import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinTestSupport

@testable import TokenpinSimulator

/// The state file: persistence across restarts, atomic replacement, corrupt files, `--reset`.
@Suite("Persistence")
struct PersistenceTests {
    @Test("a restarted card is the same card: PINs, counters, keys, DOs")
    func restart() throws {
        let directory = temporaryDirectory("sim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/card.json"
        let first = try Harness(card: SimulatedCard(stateFile: path, serial: 0xCAFE_0001))
        let cardPublic = try first.makeCurve25519DecryptionKey()
        try requireSuccess(first.putData(0x5B, Array("Doe<<Jane".utf8)))
        #expect(try first.verify(0x82, "000000") == .wrongPIN(retriesLeft: 2))

        let second = try Harness(card: SimulatedCard(stateFile: path))
        #expect(second.card.serial == 0xCAFE_0001)
        #expect(try second.getData(0x5B).data == Array("Doe<<Jane".utf8))
        #expect(try second.getData(0xC4).data.suffix(3) == [2, 0, 3])
        #expect(try second.send(CardInstruction.verify, 0x00, 0x82).statusWord == .wrongPIN(retriesLeft: 2))
        let host = try hostKeyPair()
        try requireSuccess(second.verify(0x82, "123456"))
        #expect(try second.decipher(host.publicKey).data == sharedSecret(host.secret, cardPublic))
    }

    @Test("an imported cv25519 key survives a restart in both byte orders' round trip")
    func importedKeyRestart() throws {
        let directory = temporaryDirectory("sim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/card.json"
        let harness = try Harness(card: SimulatedCard(stateFile: path))
        try requireSuccess(harness.verify(0x83, "12345678"))
        try requireSuccess(harness.putData(0xC2, AlgorithmAttributes.cv25519.bytes))
        let key = try hostKeyPair()
        let data = CommandTests.importCommand(slot: .decryption, secret: Array(key.secret.reversed()))
        try requireSuccess(harness.send(CardInstruction.putDataOdd, 0x3F, 0xFF, data).statusWord)
        // The file holds the RFC 7748 (little-endian) scalar: the canonical order.
        let stored =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        let keys = stored?["keys"] as? [[String: Any]]
        #expect((keys?[1]["secret"] as? String) == Data(key.secret).base64EncodedString())
        let restarted = try Harness(card: SimulatedCard(stateFile: path))
        #expect(try restarted.publicKey(in: restarted.readPublicKey(.decryption).data) == key.publicKey)
        let host = try hostKeyPair()
        try requireSuccess(restarted.verify(0x82, "123456"))
        #expect(try restarted.decipher(host.publicKey).data == sharedSecret(key.secret, host.publicKey))
    }

    @Test("the file is mode 0600 and replaced atomically (no temporary file left)")
    func fileMode() throws {
        let directory = temporaryDirectory("sim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/card.json"
        let harness = try Harness(card: SimulatedCard(stateFile: path))
        try requireSuccess(harness.verify(0x83, "12345678"))
        try requireSuccess(harness.putData(0x5B, [0x41]))
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["card.json"])
    }

    @Test("every truncation of a state file is an error naming the file; --reset recovers")
    func truncatedFile() throws {
        let directory = temporaryDirectory("sim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/card.json"
        _ = try SimulatedCard(stateFile: path, serial: 42)
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        let content = String(decoding: bytes, as: UTF8.self)
        let trimmedLength = content.trimmingCharacters(in: .whitespacesAndNewlines).utf8.count
        for length in stride(from: 0, to: trimmedLength, by: 7) {
            try Data(bytes.prefix(length)).write(to: URL(fileURLWithPath: path))
            let error = #expect(throws: SimulatorError.self) { try SimulatedCard(stateFile: path) }
            #expect(error?.code == .corruptStateFile)
            #expect(error?.detail.contains(path) == true)
        }
        let card = try SimulatedCard(stateFile: path, serial: 42, reset: true)
        #expect(card.serial == 42)
        _ = try SimulatedCard(stateFile: path)
    }

    @Test(
        "a file with impossible values is rejected",
        arguments: [
            ("\"pw1Retries\" : 3", "\"pw1Retries\" : 9"),
            ("\"version\" : 1", "\"version\" : 2"),
            ("\"lifeCycle\" : \"operational\"", "\"lifeCycle\" : \"melted\""),
        ])
    func invalidValues(original: String, replacement: String) throws {
        let directory = temporaryDirectory("sim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/card.json"
        _ = try SimulatedCard(stateFile: path)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(original))
        try text.replacingOccurrences(of: original, with: replacement).write(
            toFile: path, atomically: true, encoding: .utf8)
        let error = #expect(throws: SimulatorError.self) { try SimulatedCard(stateFile: path) }
        #expect(error?.code == .corruptStateFile)
    }

    @Test("reset: true makes a used card factory-new and keeps its serial")
    func resetFlag() throws {
        let directory = temporaryDirectory("sim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/card.json"
        let used = try Harness(card: SimulatedCard(stateFile: path, serial: 7))
        #expect(try used.verify(0x82, "000000") == .wrongPIN(retriesLeft: 2))
        let fresh = try Harness(card: SimulatedCard(stateFile: path, reset: true))
        #expect(fresh.card.serial == 7)
        #expect(try fresh.getData(0xC4).data.suffix(3) == [3, 0, 3])
    }

    @Test("a state file that cannot be written answers 6581 and changes nothing")
    func unwritable() throws {
        let directory = temporaryDirectory("sim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/card.json"
        let harness = try Harness(card: SimulatedCard(stateFile: path))
        try FileManager.default.removeItem(atPath: directory)
        #expect(try harness.verify(0x82, "000000") == .memoryFailure)
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord == .wrongPIN(retriesLeft: 3))
    }
}
