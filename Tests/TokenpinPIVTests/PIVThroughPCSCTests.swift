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
/// connection, and its token-verify sequence costs what the same APDUs sent bare cost.
@Suite("PIV through pcscd", .serialized, .enabled(if: PIVSandbox.isActive))
struct PIVThroughPCSCTests {
    /// The time figure is printed, not asserted: with the other suites running beside it on a loaded machine the
    /// ratio swings (1.0-1.5×); alone in the sandbox it is 1.06-1.09× (Simulator/README.md).
    @Test("a token verify through pcscd is 5 APDUs and gives the ECDH secret; timed against the same APDUs bare")
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

        let pin = Array("123456".utf8) + [0xFF, 0xFF]
        let template = TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: []), TLV(tag: 0x85, value: host.publicPoint)])
            .encoded
        let bare: [[UInt8]] = [
            [0x00, 0xA4, 0x04, 0x00, 0x05] + PIVApplicationID.selectAID + [0x00],
            [0x00, 0xF8, 0x00, 0x00, 0x00],
            [0x00, 0x20, 0x00, 0x80],
            [0x00, 0x20, 0x00, 0x80, 0x08] + pin,
            [0x00, 0x87, 0x11, 0x9D, UInt8(template.count)] + template + [0x00],
        ]
        let clock = ContinuousClock()
        var sessionTimes: [Duration] = []
        var bareTimes: [Duration] = []
        for round in 0..<60 {
            // Interleaved, so that load on the machine falls on both alike.
            let before = counting.counter.count
            let sessionTime = try clock.measure {
                try connection.withTransaction {
                    try session.select()
                    _ = try session.serial()
                    _ = try session.pinStatus()
                    try session.verify(pin: pivSecret(Array("123456".utf8)))
                    let shared = try session.sharedSecret(
                        slot: .keyManagement, algorithm: .eccP256, peerPoint: host.publicPoint)
                    if round == 0 {
                        let equal = shared.isEqual(to: expected)
                        #expect(equal)
                    }
                }
            }
            #expect(counting.counter.count - before == 5, "APDUs per token verify through pcscd")
            let bareTime = try clock.measure {
                try connection.withTransaction {
                    for apdu in bare { _ = try connection.transmit(apdu) }
                }
            }
            sessionTimes.append(sessionTime)
            bareTimes.append(bareTime)
        }
        let sessionMedian = sessionTimes.sorted()[sessionTimes.count / 2]
        let bareMedian = bareTimes.sorted()[bareTimes.count / 2]
        let ratio =
            Double(sessionMedian.components.attoseconds + sessionMedian.components.seconds * 1_000_000_000_000_000_000)
            / Double(bareMedian.components.attoseconds + bareMedian.components.seconds * 1_000_000_000_000_000_000)
        print(
            "piv-figure: token verify (5 APDUs, P-256 ECDH) through pcscd: session median \(sessionMedian), bare median \(bareMedian), ratio \(fixed(ratio, 3))"
        )
        try connection.disconnect()
    }
}

extension PIVThroughPCSCTests {
    /// The token's path as the service takes it: a connection, `PIVCard.open` (SELECT, CHUID, tries query: one
    /// transaction), then VERIFY and GENERAL AUTHENTICATE in a second, ended by pcscd's card reset; against the
    /// same 5 APDUs bare in one transaction on a connection of their own. The figure is printed, not asserted.
    @Test("PIVCard through pcscd: 5 APDUs per verify, re-selected after the reset; timed against the same APDUs bare")
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
        let pin = Array("123456".utf8) + [0xFF, 0xFF]
        let template = TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: []), TLV(tag: 0x85, value: host.publicPoint)])
            .encoded
        let bare: [[UInt8]] = [
            [0x00, 0xA4, 0x04, 0x00, 0x05] + PIVApplicationID.selectAID + [0x00],
            [0x00, 0xCB, 0x3F, 0xFF, 0x05, 0x5C, 0x03, 0x5F, 0xC1, 0x02, 0x00],
            [0x00, 0x20, 0x00, 0x80],
            [0x00, 0x20, 0x00, 0x80, 0x08] + pin,
            [0x00, 0x87, 0x11, 0x9D, UInt8(template.count)] + template + [0x00],
        ]
        let clock = ContinuousClock()
        var tokenTimes: [Duration] = []
        var bareTimes: [Duration] = []
        for round in 0..<40 {
            // Interleaved, so that load on the machine falls on both alike.
            var apdus = 0
            let tokenTime = try clock.measure {
                let counting = CountingConnection(try PCSCCardConnection(reader: PIVSandbox.reader))
                let card = try PIVCard.open(counting)
                #expect(card.guid == guid)
                let shared = try card.transaction { session throws(PIVError) -> SecretBytes in
                    try session.verify(pin: pivSecret(Array("123456".utf8)))
                    return try session.sharedSecret(
                        slot: .keyManagement, algorithm: .eccP256, peerPoint: host.publicPoint)
                }
                if round == 0 {
                    let equal = shared.isEqual(to: expected)
                    #expect(equal)
                }
                card.close()
                apdus = counting.counter.count
            }
            #expect(apdus == 5, "APDUs per token verify through pcscd")
            let bareTime = try clock.measure {
                let bareConnection = try PCSCCardConnection(reader: PIVSandbox.reader)
                try bareConnection.withTransaction {
                    for apdu in bare { _ = try bareConnection.transmit(apdu) }
                }
                bareConnection.close()
            }
            tokenTimes.append(tokenTime)
            bareTimes.append(bareTime)
        }
        let tokenMedian = tokenTimes.sorted()[tokenTimes.count / 2]
        let bareMedian = bareTimes.sorted()[bareTimes.count / 2]
        let ratio = seconds(tokenMedian) / seconds(bareMedian)
        print(
            "piv-figure: PIVCard token verify (5 APDUs, P-256 ECDH, 2 transactions) through pcscd: median \(tokenMedian), "
                + "bare (1 transaction) median \(bareMedian), ratio \(fixed(ratio, 3))")
    }
}

private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func pivSecret(_ bytes: [UInt8]) -> SecretBytes {
    var copy = bytes
    return SecretBytes(consuming: &copy)
}
