import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPCSC
import TokenpinPIV
import TokenpinTestSupport

@testable import TokenpinPKCS11

/// Where OpenSC's module runs: a pcscd sandbox of its own (Tests/EndToEnd/pkcs11-opensc.sh starts it and these tests
/// in it), since OpenSC talks to every card pcscd shows and must not touch the other suites' cards.
enum OpenSCSandbox {
    static let isActive =
        ProcessInfo.processInfo.environment["TOKENPIN_PKCS11_OPENSC"] == "1" && PCSCSandbox.isActive
        && PCSCSandbox.simulatorBinary != nil && Tools.openSCModule != nil && !PCSCSandbox.ports.isEmpty
    static var reader: String { PCSCSandbox.reader(forPortIndex: 0) }

    static func waitForCard(present: Bool) throws {
        let context = try PCSCContext()
        for _ in 0..<400 {
            if let status = try context.readerStatuses().first(where: { $0.name == reader }),
                status.isCardPresent == present, !status.isMute
            {
                return
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestSupportError("reader \(reader) did not show the card \(present ? "inserted" : "removed")")
    }

    /// The environment OpenSC gets: the sandbox's pcscd, a home of its own (no file cache of the machine's).
    static func environment(home: String) -> [String] {
        ["PATH=/usr/bin:/bin", "HOME=\(home)"]
            + ["PCSCLITE_CSOCK_NAME"].compactMap { name in
                ProcessInfo.processInfo.environment[name].map { "\(name)=\($0)" }
            }
    }
}

/// tokenpin-sim's PIV card with a P-256 key in 9D and its certificate, through pcscd, vpcd and OpenSC's PKCS#11
/// module, as a PIV badge is used on a workstation.
final class SimulatedPIVCard {
    let directory = temporaryDirectory("opensc")
    let simulator: SimulatorProcess
    let point: [UInt8]

    init() throws {
        simulator = try SimulatorProcess(
            portIndex: 0, state: directory + "/card.json", arguments: ["--profile", "piv-card", "--serial", "00C0FFEE"])
        try OpenSCSandbox.waitForCard(present: true)
        let connection = try PCSCCardConnection(reader: OpenSCSandbox.reader)
        defer { connection.close() }
        let session = PIVSession(connection: connection)
        _ = try session.select()
        try session.authenticate(
            managementKey: secretBytes(Array(1...8) + Array(1...8) + Array(1...8)),
            algorithm: .tripleDES)
        guard case .ecc(_, let point) = try session.generateKey(in: .keyManagement, algorithm: .eccP256) else {
            throw TestSupportError("the card made no EC key")
        }
        self.point = point
        // OpenSC's PIV driver lists a key whose slot has a certificate.
        let der = certificate(spki: ecSPKI(point, curveOID: [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]))
        try session.putObject(0x5F_C10B, value: TLV(tag: 0x70, value: der).encoded + [0x71, 0x01, 0x00, 0xFE, 0x00])
    }

    /// The card PIN's tries left, read on the card itself (VERIFY without data).
    func triesLeft() throws -> Int? {
        let connection = try PCSCCardConnection(reader: OpenSCSandbox.reader)
        defer { connection.close() }
        let session = PIVSession(connection: connection)
        _ = try session.select()
        if case .retriesLeft(let tries) = try session.pinStatus() { return tries }
        return nil
    }

    func helper() throws -> PKCS11Helper {
        try PKCS11Helper.start(
            module: .path(Tools.openSCModule!), timeout: 30_000, executable: Tools.helper,
            environment: OpenSCSandbox.environment(home: directory))
    }

    deinit {
        simulator.kill()
        try? OpenSCSandbox.waitForCard(present: false)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

@Suite(
    "OpenSC's PKCS#11 module over pcscd and tokenpin-sim's PIV card", .serialized, .enabled(if: OpenSCSandbox.isActive))
struct OpenSCTests {
    @Test("the 9D key is listed with its public key, answers after login, and a wrong PIN is counted on the card")
    func pivKeyThroughOpenSC() throws {
        let card = try SimulatedPIVCard()
        let helper = try card.helper()
        defer { helper.stop() }
        let key = try helper.selectKey()
        #expect(key.algorithm == .ecdh(.nistP256))
        #expect(key.publicKey == .ec(point: card.point))
        #expect(key.id == [0x03], "OpenSC names the key management key 03")
        #expect(key.token.slotDescription.contains("tokenpin vpcd"))
        #expect(key.uri.hasPrefix("pkcs11:model=PKCS%2315%20emulated"), "\(key.uri)")

        let challenge = try PKCS11Challenge.fresh(for: key)
        let answer = try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
        let matches = answer.isEqual(to: challenge.secret)
        #expect(matches)
        #expect(try card.triesLeft() == 3)

        expectTokenError(
            matching: { error in
                guard case .wrongPIN = error else { return false }
                return true
            },
            in: { () throws(PKCS11TokenError) in
                try helper.answer(key, pin: secret("999999"), challenge: challenge.challenge)
            })
        #expect(try card.triesLeft() == 2, "the wrong PIN was counted on the card")
        let status = try helper.status(of: key)
        print(
            "figure: OpenSC's tries hint after one wrong PIN: \(status.pinTries) (flags 0x\(String(status.flags.rawValue, radix: 16)))"
        )
        let again = try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
        let matchesAgain = again.isEqual(to: challenge.secret)
        #expect(matchesAgain)
        #expect(try card.triesLeft() == 3, "the right PIN reset the card's counter")

        // What pkcs11-tool and p11tool list through the same module is what tokenpin reports.
        let environment = Dictionary(
            uniqueKeysWithValues: OpenSCSandbox.environment(home: card.directory).map {
                let parts = $0.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), String(parts[1]))
            })
        let objects = try run(
            Tools.pkcs11Tool!, ["--module", Tools.openSCModule!, "--list-objects", "--type", "pubkey"],
            environment: environment)
        #expect(objects.output.contains("ID:         03"), "\(objects.output)")
        if let p11tool = Tools.p11tool {
            let listed = try run(
                p11tool,
                [
                    "--provider", Tools.openSCModule!, "--list-privkeys", "--login", "--set-pin", "123456",
                    key.token.uri,
                ],
                environment: environment)
            // The private key shows only after login, so tokenpin names it by token and id; p11tool's URL (with the
            // private key's label) is that and `object=`, and selects the same key.
            let urls = p11toolURLs(listed.output)
            #expect(urls.count == 1 && urls.map(withoutObject) == [key.uri], "tokenpin: \(key.uri) p11tool: \(urls)")
            for url in urls { #expect(try helper.selectKey(uri: url) == key) }
        }
    }

    @Test("three wrong PINs block the card; then even the right PIN is a locked PIN, and the card says 0 tries")
    func blockedCard() throws {
        let card = try SimulatedPIVCard()
        let helper = try card.helper()
        defer { helper.stop() }
        let key = try helper.selectKey()
        let challenge = try PKCS11Challenge.fresh(for: key)
        for _ in 0..<3 {
            expectTokenError(
                matching: { error in
                    switch error {
                    case .wrongPIN, .pinLocked: true
                    default: false
                    }
                },
                in: { () throws(PKCS11TokenError) in
                    try helper.answer(key, pin: secret("000000"), challenge: challenge.challenge)
                })
        }
        #expect(try card.triesLeft() == 0)
        expectTokenError(
            matching: { $0 == .pinLocked },
            in: { () throws(PKCS11TokenError) in
                try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
            })
    }

    @Test("the figures through OpenSC: calls per verify, bare against through the helper, the helper's start")
    func figures() throws {
        let card = try SimulatedPIVCard()
        for variable in OpenSCSandbox.environment(home: card.directory) {
            let parts = variable.split(separator: "=", maxSplits: 1)
            setenv(String(parts[0]), String(parts[1]), 1)
        }
        let tokens = try PKCS11Tokens.load(.path(Tools.openSCModule!))
        defer { tokens.finalize() }
        let key = try PKCS11Helper.select(from: try tokens.list(uri: nil), uri: nil, source: .path(Tools.openSCModule!))
        try Figures.report("OpenSC/vpcd", key: key, pin: "123456", tokens: tokens) { try card.helper() }
    }
}
