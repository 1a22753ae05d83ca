import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinTestSupport

@testable import TokenpinSimulator

/// `tokenpin-sim --profile`: which applications and ATR the card in the virtual reader has.
@Suite("tokenpin-sim profiles", .enabled(if: simulatorBinary != nil), .serialized)
struct PIVVirtualReaderTests {
    @Test("--profile yubikey: the YubiKey ATR, PIV and OpenPGP; piv-card: PIV alone; persisted PIV state")
    func profiles() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/card.json"
        for (profile, atr, openPGP) in [
            ("yubikey", PIVProfile.yubiKeyATR, [UInt8]([0x90, 0x00])),
            ("piv-card", CardProfile.atr, [0x6A, 0x82]),
        ] {
            let vpcd = try FakeVPCD()
            let process = try runSimulator([
                "--state", state, "--port", String(vpcd.port), "--host", "127.0.0.1",
                "--serial", "00C0FFEE", "--profile", profile,
            ])
            defer { if process.isRunning { process.terminate() } }
            try vpcd.accept()
            #expect(vpcd.exchange("04") == atr)
            vpcd.send([0x01])
            #expect(vpcd.exchange("00A4040005A000000308")?.suffix(2) == [0x90, 0x00])
            #expect(
                vpcd.exchange("0020008008303030303030FFFF")?.suffix(2)
                    == (profile == "yubikey" ? [0x63, 0xC2] : [0x63, 0xC1]))
            #expect(vpcd.exchange("00A4040006D27600012401") == openPGP)
            process.terminate()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
    }

    @Test("--tap records PIV GENERAL AUTHENTICATE answers with a key, not the management key's challenges")
    func tapsGeneralAuthenticate() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tapFile = directory + "/tap"
        let vpcd = try FakeVPCD()
        let process = try runSimulator([
            "--state", directory + "/card.json", "--port", String(vpcd.port), "--host", "127.0.0.1",
            "--profile", "piv-card", "--tap", tapFile,
        ])
        defer { if process.isRunning { process.terminate() } }
        try vpcd.accept()
        vpcd.send([0x01])
        #expect(vpcd.exchange("00A4040005A000000308")?.suffix(2) == [0x90, 0x00])
        let key = guardedCopy(PIVProfile.defaultManagementKey)
        let first = try #require(vpcd.exchange("0087039B047C02800000"))
        let witness = try #require(try TLV.find(0x80, in: Array(first.dropLast(2)))?.value)
        let decrypted = try BlockCiphers.decrypt(witness, key: key, algorithm: .tripleDES)
        let second = TLV(
            tag: 0x7C, children: [TLV(tag: 0x80, value: decrypted), TLV(tag: 0x81, value: SecureRandom.bytes(8))]
        ).encoded
        #expect(
            vpcd.exchange("0087039B" + Hex.encode([UInt8(second.count)] + second) + "00")?.suffix(2) == [0x90, 0x00])
        let generated = try #require(vpcd.exchange("0047009D05AC0380011100"))
        #expect(generated.suffix(2) == [0x90, 0x00])
        #expect(vpcd.exchange("0020008008313233343536FFFF") == [0x90, 0x00])
        let host = try EllipticCurveDH.generateKeyPair(on: .nistP256)
        let template = TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: []), TLV(tag: 0x85, value: host.publicPoint)])
            .encoded
        let answer = try #require(vpcd.exchange("0087119D" + Hex.encode([UInt8(template.count)] + template) + "00"))
        #expect(answer.suffix(2) == [0x90, 0x00])
        process.terminate()
        process.waitUntilExit()
        let lines = (try String(contentsOfFile: tapFile, encoding: .utf8)).split(separator: "\n").map(String.init)
        #expect(lines == [Hex.encode(answer)])
    }

    @Test("an unknown profile is a usage error")
    func unknownProfile() throws {
        let process = try runSimulator(["--state", "x", "--profile", "nitrokey"])
        process.waitUntilExit()
        #expect(process.terminationStatus == 2)
    }
}
