import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@Suite("PIVCard")
struct PIVCardTests {
    @Test("a YubiKey opens with its serial as identity, its version, and the PIN's tries; no CHUID needed")
    func yubiKey() throws {
        let card = try Card(profile: .yubikey)
        let piv = try PIVCard.open(card.connection, trace: { card.log.lines.append($0) })
        #expect(
            try piv.transaction { session throws(PIVError) in try piv.firmware(session) } == PIVProfile.firmwareVersion)
        #expect(piv.yubiKeySerial == 0x00C0_FFEE)
        #expect(piv.chuid == nil)
        #expect(piv.identity == "piv-serial:\(0x00C0_FFEE)")
        #expect(piv.label == "YubiKey PIV \(0x00C0_FFEE)")
        #expect(piv.pinStatus == .retriesLeft(3))
        #expect(try piv.transaction { session throws(PIVError) in try piv.hasMetadata(session) })
        // SELECT, CHUID (none), GET VERSION, GET SERIAL, tries query; the version is not asked again.
        #expect(card.trace.filter { $0.hasPrefix(">") }.count == 5)
    }

    @Test("a PIV card is named by its CHUID GUID and is sent no YubiKey instruction beyond GET VERSION")
    func pivCard() throws {
        let card = try Card(profile: .pivCard)
        let piv = try PIVCard.open(card.connection, trace: { card.log.lines.append($0) })
        let guid = try #require(piv.guid)
        #expect(piv.identity == "piv-guid:" + Hex.encode(guid).lowercased())
        let hex = Hex.encode(guid).lowercased()
        #expect(piv.label == "PIV card \(hex.prefix(4))…\(hex.suffix(4))")
        #expect(piv.yubiKeySerial == nil)
        // The GUID names the card: open is SELECT, CHUID and the tries query, nothing YubiKey.
        var commands = card.trace.filter { $0.hasPrefix(">") }
        #expect(commands.count == 3)
        #expect(!commands.contains { $0.contains("00 FD") })
        // What a slot holds: GET VERSION first (6D00), then the certificate; never GET SERIAL or GET METADATA.
        let content = try piv.transaction { session throws(PIVError) in try piv.content(of: .keyManagement, session) }
        #expect(content == .empty)
        #expect(try piv.transaction { session throws(PIVError) in try piv.firmware(session) } == nil)
        commands = card.trace.filter { $0.hasPrefix(">") }
        #expect(commands.filter { $0.contains("00 FD") }.count == 1, "GET VERSION asked once")
        #expect(!commands.contains { $0.contains("00 F8") || $0.contains("00 F7") })
    }

    @Test("a YubiKey with a CHUID opens in 3 APDUs; its version is asked when a slot is read")
    func yubiKeyWithCHUID() throws {
        let card = try Card(profile: .yubikey)
        let guid = SecureRandom.bytes(16)
        try card.putObject(
            [0x5F, 0xC1, 0x02],
            TLV(tag: 0x30, value: [UInt8](repeating: 0xD4, count: 25)).encoded + TLV(tag: 0x34, value: guid).encoded)
        let piv = try PIVCard.open(card.connection, trace: { card.log.lines.append($0) })
        #expect(card.trace.filter { $0.hasPrefix(">") }.count == 3)
        #expect(piv.identity == "piv-guid:" + Hex.encode(guid).lowercased())
        #expect(
            try piv.transaction { session throws(PIVError) in try piv.firmware(session) } == PIVProfile.firmwareVersion)
        #expect(try piv.transaction { session throws(PIVError) in try piv.hasMetadata(session) })
    }

    @Test("an all-zero GUID does not name a card; the key's fingerprint does")
    func zeroGUID() throws {
        let card = try Card(profile: .pivCard)
        try card.putObject(
            [0x5F, 0xC1, 0x02],
            TLV(tag: 0x30, value: [UInt8](repeating: 0xD4, count: 25)).encoded
                + TLV(tag: 0x34, value: [UInt8](repeating: 0, count: 16)).encoded)
        let piv = try PIVCard.open(card.connection)
        #expect(piv.guid == nil)
        #expect(piv.identity == nil)
        #expect(piv.label == "PIV card")
        let point = [UInt8](repeating: 0x04, count: 1) + [UInt8](repeating: 7, count: 64)
        let digest = try PublicDigest.sha256(point)
        #expect(
            try PIVCard.keyIdentity(.ecc(algorithm: .eccP256, point: point))
                == "piv-key:" + Hex.encode(Array(digest.prefix(8))).lowercased())
        // An RSA modulus is named without its leading zeros.
        let modulus: [UInt8] = [0x00] + [UInt8](repeating: 0xC1, count: 256)
        #expect(
            try PIVCard.keyIdentity(.rsa(modulus: modulus, exponent: [1, 0, 1]))
                == "piv-key:"
                + Hex.encode(Array(try PublicDigest.sha256(Array(modulus.dropFirst())).prefix(8)))
                .lowercased())
    }

    @Test("open reads the PIN's tries left without spending one")
    func triesAtOpen() throws {
        let card = try Card(profile: .pivCard)
        let first = try PIVCard.open(card.connection)
        #expect(
            throws: PIVError.wrongPIN(retriesLeft: 2),
            performing: {
                try first.transaction { session throws(PIVError) in try session.verify(pin: secret("654321")) }
            })
        let second = try PIVCard.open(card.connection)
        #expect(second.pinStatus == .retriesLeft(2))
        let third = try PIVCard.open(card.connection)
        #expect(third.pinStatus == .retriesLeft(2))
    }

    @Test("a card without PIV is applicationNotFound")
    func noPIV() throws {
        let card = try Card(profile: .openpgp)
        #expect(throws: PIVError.applicationNotFound) { try PIVCard.open(card.connection) }
    }

    @Test("a transaction after a reset selects the application again; without one it does not")
    func reselectAfterReset() throws {
        let simulated = try SimulatedCard(stateFile: nil, serial: 7, profile: .pivCard)
        let connection = ResettingConnection(
            SimulatedCardConnection(card: simulated, sleep: { _ in }), policy: .afterEveryTransaction,
            reset: { simulated.reset() })
        let piv = try PIVCard.open(connection)
        #expect(connection.resets == 1)
        let selects = { connection.transmitted.filter { $0.count > 1 && $0[1] == 0xA4 }.count }
        #expect(selects() == 1)
        // The reset that ended open dropped the selection: the next transaction selects again.
        let status = try piv.transaction { session throws(PIVError) in try session.pinStatus() }
        #expect(status == .retriesLeft(3))
        #expect(selects() == 2)

        // A connection that never resets: one SELECT for the whole session.
        let card = try Card(profile: .pivCard)
        let plain = try PIVCard.open(card.connection, trace: { card.log.lines.append($0) })
        for _ in 0..<3 { _ = try plain.transaction { session throws(PIVError) in try session.pinStatus() } }
        #expect(card.trace.filter { $0.hasPrefix("> 00 A4") }.count == 1)
    }

    @Test("no command goes out after close")
    func closed() throws {
        let card = try Card(profile: .pivCard)
        let piv = try PIVCard.open(card.connection)
        piv.close()
        let before = card.card.processedCount
        #expect(throws: PIVError.transport(.sessionClosed("PIV"))) {
            _ = try piv.transaction { session throws(PIVError) in try session.pinStatus() }
        }
        #expect(card.card.processedCount == before)
    }

    @Test("a card pulled mid-session is a transport error")
    func pulled() throws {
        let card = try Card(profile: .pivCard)
        let piv = try PIVCard.open(card.connection)
        card.card.remove()
        do {
            _ = try piv.transaction { session throws(PIVError) in try session.pinStatus() }
            Issue.record("no error")
        } catch {
            guard case .transport = error else {
                Issue.record("expected .transport, got \(error)")
                return
            }
        }
    }
}
