import Foundation
import Testing
import TokenpinAPDU
@testable import TokenpinSimulator

/// `tokenpin-sim --profile`: which applications and ATR the card in the virtual reader has.
@Suite("tokenpin-sim profiles", .enabled(if: simulatorBinary != nil), .serialized)
struct PIVVirtualReaderTests {
    @Test("--profile yubikey: the YubiKey ATR, PIV and OpenPGP; piv-card: PIV alone; persisted PIV state")
    func profiles() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/card.json"
        for (profile, atr, openPGP) in [("yubikey", PIVProfile.yubiKeyATR, [UInt8]([0x90, 0x00])),
                                        ("piv-card", CardProfile.atr, [0x6A, 0x82])] {
            let vpcd = try FakeVPCD()
            let process = try runSimulator(["--state", state, "--port", String(vpcd.port), "--host", "127.0.0.1",
                                            "--serial", "00C0FFEE", "--profile", profile])
            defer { if process.isRunning { process.terminate() } }
            try vpcd.accept()
            #expect(vpcd.exchange("04") == atr)
            vpcd.send([0x01])
            #expect(vpcd.exchange("00A4040005A000000308")?.suffix(2) == [0x90, 0x00])
            #expect(vpcd.exchange("0020008008303030303030FFFF")?.suffix(2) == (profile == "yubikey" ? [0x63, 0xC2] : [0x63, 0xC1]))
            #expect(vpcd.exchange("00A4040006D27600012401") == openPGP)
            process.terminate()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
    }

    @Test("an unknown profile is a usage error")
    func unknownProfile() throws {
        let process = try runSimulator(["--state", "x", "--profile", "nitrokey"])
        process.waitUntilExit()
        #expect(process.terminationStatus == 64)
    }
}
