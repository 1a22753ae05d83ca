import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPCSC
import TokenpinPIV
import TokenpinTestSupport

/// The port of the shared sandbox (Simulator/pcscd-sandbox, at least 8 vpcd ports) this suite uses: the fifth.
enum PIVSandbox {
    static let index = 4
    static let isActive = PCSCSandbox.isActive && PCSCSandbox.simulatorBinary != nil && PCSCSandbox.ports.count >= 8
    static var reader: String { PCSCSandbox.reader(forPortIndex: index) }

    static func waitForCard(present: Bool) throws {
        let context = try PCSCContext()
        for _ in 0..<400 {
            if let status = try context.readerStatuses().first(where: { $0.name == reader }),
                status.isCardPresent == present,
                !status.isMute
            {
                return
            }
            usleep(50_000)
        }
        Issue.record("reader \(reader) did not show the card \(present ? "inserted" : "removed")")
    }
}

/// PIVSession through pcscd and tokenpin-sim's YubiKey profile: the session works over a real PC/SC
/// connection, and a token verify is 5 APDUs that give the ECDH secret. What it costs against the same APDUs sent
/// bare is a figure of `make bench` (scripts/bench-token, `tokenpin bench --token` on the simulated YubiKey's PIV
/// application), not of a test: a time measured beside the other suites on a loaded machine proves nothing.
@Suite("PIV through pcscd", .serialized, .enabled(if: PIVSandbox.isActive))
struct PIVThroughPCSCTests {
    @Test("a token verify through pcscd is 5 APDUs and gives the ECDH secret, every time")
    func verifyThroughPCSC() throws {
        let directory = temporaryDirectory("tokenpin-piv")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let simulator = try SimulatorProcess(
            portIndex: PIVSandbox.index, state: directory + "/card.json",
            arguments: ["--profile", "yubikey", "--serial", "00C0FFEE"])
        defer {
            simulator.kill()
            try? PIVSandbox.waitForCard(present: false)
        }
        try PIVSandbox.waitForCard(present: true)

        let connection = try PCSCCardConnection(reader: PIVSandbox.reader)
        let counting = CountingConnection(connection)
        let session = PIVSession(connection: counting)
        try session.select()
        #expect(try session.serial() == 0x00C0_FFEE)
        try session.authenticate(
            managementKey: pivSecret(Array(1...8) + Array(1...8) + Array(1...8)), algorithm: .tripleDES)
        guard case .ecc(_, let cardPoint) = try session.generateKey(in: .keyManagement, algorithm: .eccP256) else {
            Issue.record("not an EC key")
            return
        }
        let host = try EllipticCurveDH.generateKeyPair(on: .nistP256)
        let expected = try EllipticCurveDH.sharedSecret(
            privateKey: host.privateKey, peerPoint: cardPoint, on: .nistP256)

        for _ in 0..<3 {
            let before = counting.counter.count
            try connection.withTransaction {
                try session.select()
                _ = try session.serial()
                _ = try session.pinStatus()
                try session.verify(pin: pivSecret(Array("123456".utf8)))
                let shared = try session.sharedSecret(
                    slot: .keyManagement, algorithm: .eccP256, peerPoint: host.publicPoint)
                let equal = shared.isEqual(to: expected)
                #expect(equal)
            }
            #expect(counting.counter.count - before == 5, "APDUs per token verify through pcscd")
        }
        try connection.disconnect()
    }
}

extension PIVThroughPCSCTests {
    /// The token's path as the service takes it: a connection, `PIVCard.open` (SELECT, CHUID, tries query: one
    /// transaction), then VERIFY and GENERAL AUTHENTICATE in a second, ended by pcscd's card reset.
    @Test("PIVCard through pcscd: 5 APDUs per verify, re-selected after the reset")
    func pivCardThroughPCSC() throws {
        let directory = temporaryDirectory("tokenpin-piv-card")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let simulator = try SimulatorProcess(
            portIndex: PIVSandbox.index, state: directory + "/card.json",
            arguments: ["--profile", "piv-card", "--serial", "00C0FFEE"])
        defer {
            simulator.kill()
            try? PIVSandbox.waitForCard(present: false)
        }
        try PIVSandbox.waitForCard(present: true)

        // Set up: a P-256 key in 9D, with the default management key.
        let setup = try PCSCCardConnection(reader: PIVSandbox.reader)
        let session = PIVSession(connection: setup)
        try session.select()
        try session.authenticate(
            managementKey: pivSecret(Array(1...8) + Array(1...8) + Array(1...8)), algorithm: .tripleDES)
        guard case .ecc(_, let cardPoint) = try session.generateKey(in: .keyManagement, algorithm: .eccP256) else {
            Issue.record("not an EC key")
            return
        }
        try setup.disconnect()
        let host = try EllipticCurveDH.generateKeyPair(on: .nistP256)
        let expected = try EllipticCurveDH.sharedSecret(
            privateKey: host.privateKey, peerPoint: cardPoint, on: .nistP256)

        // A transaction after the reset that ended the verified one selects the application again by itself.
        let connection = try PCSCCardConnection(reader: PIVSandbox.reader)
        let card = try PIVCard.open(connection)
        try card.transaction { session throws(PIVError) in try session.verify(pin: pivSecret(Array("123456".utf8))) }
        #expect(connection.resets == 1, "the verified transaction ended with a reset")
        #expect(try card.transaction { session throws(PIVError) in try session.pinStatus() } == .retriesLeft(3))
        card.close()

        let guid = try #require(card.guid)
        for _ in 0..<3 {
            let counting = CountingConnection(try PCSCCardConnection(reader: PIVSandbox.reader))
            let card = try PIVCard.open(counting)
            #expect(card.guid == guid)
            let shared = try card.transaction { session throws(PIVError) -> SecretBytes in
                try session.verify(pin: pivSecret(Array("123456".utf8)))
                return try session.sharedSecret(
                    slot: .keyManagement, algorithm: .eccP256, peerPoint: host.publicPoint)
            }
            let equal = shared.isEqual(to: expected)
            #expect(equal)
            card.close()
            #expect(counting.counter.count == 5, "APDUs per token verify through pcscd")
        }
    }
}

func pivSecret(_ bytes: [UInt8]) -> SecretBytes {
    var copy = bytes
    return SecretBytes(consuming: &copy)
}
