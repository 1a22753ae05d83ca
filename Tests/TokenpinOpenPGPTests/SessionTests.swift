import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinOpenPGP
import TokenpinSimulator
import TokenpinTestSupport

/// A factory-new simulated card (user PIN 123456, admin PIN 12345678) and a session on it.
struct Fixture {
    let card: SimulatedCard
    let connection: CountingConnection
    var session: OpenPGPSession
    var traceLines: [String] { traceBox.lines }
    private let traceBox = TraceBox()

    init(serial: UInt32 = 0x0BAD_CAFE) throws {
        card = try SimulatedCard(stateFile: nil, serial: serial)
        connection = CountingConnection(SimulatedCardConnection(card: card, sleep: { _ in }))
        session = OpenPGPSession(connection: connection)
        let box = traceBox
        session.trace = { box.lines.append($0) }
    }

    /// Sets the decryption slot to cv25519 and generates a key; returns its public key.
    func provisionDecryptionKey() throws -> [UInt8] {
        try session.select()
        try session.verify(.pw3, pin: secret("12345678"))
        try session.setAlgorithmAttributes(.cv25519, for: .decryption)
        let key = try session.generateKey(for: .decryption)
        return try #require(key.curve25519)
    }

    final class TraceBox {
        var lines: [String] = []
    }
}

@Suite("OpenPGP session on the simulated card")
struct SessionTests {
    @Test("select and read the application related data")
    func selectAndRead() throws {
        let fixture = try Fixture(serial: 0x1234_5678)
        try fixture.session.select()
        let data = try fixture.session.applicationRelatedData()
        #expect(data.aid.serial == 0x1234_5678)
        #expect(data.aid.serialString == "12345678")
        #expect(data.aid.version == (3, 4))
        #expect(data.passwordStatus.retriesPW1 == 3)
        #expect(data.passwordStatus.retriesPW3 == 3)
        #expect(data.extendedCapabilities?.algorithmAttributesChangeable == true)
        #expect(!data.hasCurve25519DecryptionKey)
        let lengths = try #require(data.lengthCapabilities)
        #expect(lengths.extendedLength && lengths.commandChaining)
        #expect(fixture.connection.lengthCapabilities == lengths)
    }

    @Test("the tries query costs no try")
    func triesQuery() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        for _ in 0..<5 {
            #expect(try fixture.session.retriesLeft(.pw1) == 3)
            #expect(try fixture.session.retriesLeft(.pw3) == 3)
        }
        #expect(try fixture.session.passwordStatus().retriesPW1 == 3)
        // After a correct VERIFY the card answers 9000; the count then comes from C4.
        try fixture.session.verify(.pw1, pin: secret("123456"))
        #expect(try fixture.session.retriesLeft(.pw1) == 3)
    }

    @Test("a wrong PIN counts down and blocks at zero with 6983")
    func wrongPINBlocks() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        for expected in [2, 1, 0] {
            #expect(throws: OpenPGPError.wrongPIN(retriesLeft: expected)) {
                try fixture.session.verify(.pw1, pin: secret("000000"))
            }
            #expect(try fixture.session.retriesLeft(.pw1) == expected)
        }
        // Blocked: even the right PIN is refused, and no counter moves.
        #expect(throws: OpenPGPError.blocked) { try fixture.session.verify(.pw1, pin: secret("123456")) }
        #expect(fixture.connection.counter.headers.last == [0x00, 0x20, 0x00, 0x82])
        #expect(try fixture.session.retriesLeft(.pw3) == 3)
    }

    @Test("a 6982 answer to VERIFY (YubiKey style) is a wrong PIN with the counter from C4")
    func securityStatusAnswerToVerify() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        fixture.card.faults = CardFaults(rules: [
            .init(instruction: 0x20, fault: .status(.securityStatusNotSatisfied), times: 1)
        ])
        #expect(throws: OpenPGPError.wrongPIN(retriesLeft: 3)) {
            try fixture.session.verify(.pw1, pin: secret("000000"))
        }
    }

    @Test("an empty PIN is refused before anything is sent")
    func emptyPIN() throws {
        let fixture = try Fixture()
        #expect {
            try fixture.session.verify(.pw1, pin: secret(""))
        } throws: { if case .invalidArgument? = $0 as? OpenPGPError { true } else { false } }
        #expect(fixture.connection.counter.headers.isEmpty)
    }

    @Test("change the PIN, then only the new one verifies")
    func changePIN() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        try fixture.session.changeReferenceData(.pw1, current: secret("123456"), new: secret("246810"))
        #expect(throws: OpenPGPError.wrongPIN(retriesLeft: 2)) {
            try fixture.session.verify(.pw1, pin: secret("123456"))
        }
        try fixture.session.verify(.pw1, pin: secret("246810"))
        #expect(try fixture.session.retriesLeft(.pw1) == 3)
        // A wrong current PIN is a wrong PIN.
        #expect(throws: OpenPGPError.wrongPIN(retriesLeft: 2)) {
            try fixture.session.changeReferenceData(.pw1, current: secret("999999"), new: secret("135790"))
        }
        // A new PIN the card finds too short.
        #expect(throws: OpenPGPError.incorrectData) {
            try fixture.session.changeReferenceData(.pw1, current: secret("246810"), new: secret("12"))
        }
    }

    @Test("unblock with the admin PIN and with the Resetting Code")
    func unblock() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        for _ in 0..<3 { _ = try? fixture.session.verify(.pw1, pin: secret("000000")) }
        #expect(try fixture.session.retriesLeft(.pw1) == 0)
        #expect(throws: OpenPGPError.securityStatusNotSatisfied) {
            try fixture.session.resetRetryCounter(newPIN: secret("112233"))
        }
        try fixture.session.verify(.pw3, pin: secret("12345678"))
        try fixture.session.resetRetryCounter(newPIN: secret("112233"))
        try fixture.session.verify(.pw1, pin: secret("112233"))

        try fixture.session.setResettingCode(secret("87654321"))
        for _ in 0..<3 { _ = try? fixture.session.verify(.pw1, pin: secret("000000")) }
        #expect(throws: OpenPGPError.wrongPIN(retriesLeft: 2)) {
            try fixture.session.resetRetryCounter(resetCode: secret("00000000"), newPIN: secret("445566"))
        }
        try fixture.session.resetRetryCounter(resetCode: secret("87654321"), newPIN: secret("445566"))
        try fixture.session.verify(.pw1, pin: secret("445566"))
    }

    @Test("set cv25519, generate a decryption key with the admin PIN, read the public key back")
    func generateAndRead() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        #expect(throws: OpenPGPError.referencedDataNotFound) { try fixture.session.publicKey(for: .decryption) }
        #expect(throws: OpenPGPError.securityStatusNotSatisfied) { try fixture.session.generateKey(for: .decryption) }
        let generated = try fixture.provisionDecryptionKey()
        #expect(generated.count == 32)
        #expect(try fixture.session.publicKey(for: .decryption).curve25519 == generated)
        let data = try fixture.session.applicationRelatedData()
        #expect(data.algorithmAttributes[.decryption] == .cv25519)
        #expect(data.keyStatus[.decryption] == .generated)
        #expect(data.hasCurve25519DecryptionKey)
    }

    @Test("decipher equals the shared secret computed locally")
    func decipher() throws {
        let fixture = try Fixture()
        let cardKey = try fixture.provisionDecryptionKey()
        let ephemeral = try X25519.generateKeyPair()
        try fixture.session.verify(.pw1, pin: secret("123456"))
        let fromCard = try fixture.session.decipher(ephemeralPublicKey: ephemeral.publicKey)
        let local = try X25519.sharedSecret(secretKey: ephemeral.secretKey, peerPublicKey: cardKey)
        let count = fromCard.count
        #expect(count == 32)
        let equal = fromCard.isEqual(to: local)
        #expect(equal)
        // The shared secret never shows in the trace.
        let hexSecret = local.withUnsafeBytes { Hex.encode($0, separator: " ") }
        #expect(!fixture.traceLines.contains { $0.contains(hexSecret) })
        #expect(fixture.traceLines.contains { $0.hasPrefix("< 32 bytes [sensitive]") })
    }

    @Test("decipher without VERIFY: security status not satisfied")
    func decipherWithoutVerify() throws {
        let fixture = try Fixture()
        _ = try fixture.provisionDecryptionKey()
        // A reset drops the verified PINs, as at the end of a PC/SC transaction.
        fixture.card.reset()
        try fixture.session.select()
        let ephemeral = try X25519.generateKeyPair()
        #expect(throws: OpenPGPError.securityStatusNotSatisfied) {
            _ = try fixture.session.decipher(ephemeralPublicKey: ephemeral.publicKey)
        }
    }

    @Test("decipher checks the key length before sending", arguments: [0, 31, 33, 65])
    func decipherKeyLength(length: Int) throws {
        let fixture = try Fixture()
        #expect {
            _ = try fixture.session.decipher(ephemeralPublicKey: Array(repeating: 9, count: length))
        } throws: { if case .invalidArgument? = $0 as? OpenPGPError { true } else { false } }
        #expect(fixture.connection.counter.headers.isEmpty)
    }

    @Test("decipher with a decryption slot that is not cv25519 is refused by the card")
    func decipherWrongAlgorithm() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        try fixture.session.verify(.pw3, pin: secret("12345678"))
        // EdDSA is not a decryption algorithm: the card refuses it for this slot.
        #expect(throws: OpenPGPError.incorrectData) {
            try fixture.session.setAlgorithmAttributes(.ed25519, for: .decryption)
        }
        // The factory slot is RSA 2048 without a key.
        try fixture.session.verify(.pw1, pin: secret("123456"))
        let ephemeral = try X25519.generateKeyPair()
        do {
            _ = try fixture.session.decipher(ephemeralPublicKey: ephemeral.publicKey)
            Issue.record("a slot without a cv25519 key deciphered")
        } catch {
            let refused: [OpenPGPError] = [.wrongAlgorithm, .incorrectData, .referencedDataNotFound]
            #expect(refused.contains(error), "\(error)")
        }
    }

    @Test("a card that vanishes mid-command gives a transport error")
    func vanish() throws {
        let fixture = try Fixture()
        _ = try fixture.provisionDecryptionKey()
        try fixture.session.verify(.pw1, pin: secret("123456"))
        fixture.card.faults = CardFaults(rules: [
            .init(instruction: 0x2A, fault: .vanish(afterProcessing: false), times: 1)
        ])
        let ephemeral = try X25519.generateKeyPair()
        do {
            _ = try fixture.session.decipher(ephemeralPublicKey: ephemeral.publicKey)
            Issue.record("decipher succeeded on a vanished card")
        } catch {
            guard case .transport(let underlying) = error else {
                Issue.record("expected a transport error, got \(error)")
                return
            }
            #expect(underlying.kind == .cardRemoved)
        }
        // The card stays gone: the next command is a transport failure, the simulator saying it was removed.
        #expect {
            try fixture.session.select()
        } throws: { error in
            guard case .transport(let underlying)? = error as? OpenPGPError else { return false }
            return underlying == CardTransportError(.cardRemoved, "the simulated card was removed from the reader")
        }
    }

    @Test("malformed answers are .malformed, never a crash", arguments: CardFaults.Malformation.allCases)
    func malformedAnswers(kind: CardFaults.Malformation) throws {
        let fixture = try Fixture()
        let cardKey = try fixture.provisionDecryptionKey()
        #expect(cardKey.count == 32)
        let ephemeral = try X25519.generateKeyPair()
        try fixture.session.verify(.pw1, pin: secret("123456"))
        for instruction: UInt8 in [0xCA, 0x47, 0x2A, 0x20] {
            fixture.card.faults = CardFaults(rules: [.init(instruction: instruction, fault: .malformed(kind), times: 1)]
            )
            do {
                switch instruction {
                case 0xCA: _ = try fixture.session.applicationRelatedData()
                case 0x47: _ = try fixture.session.publicKey(for: .decryption)
                case 0x2A: _ = try fixture.session.decipher(ephemeralPublicKey: ephemeral.publicKey)
                default: _ = try fixture.session.retriesLeft(.pw1)
                }
                // Some malformations leave a valid answer (a truncated empty body); that is fine.
            } catch {
                // A cut-off status word is a random one, so any typed error may come back; only the
                // transport must not be blamed.
                if case .transport = error { Issue.record("INS \(Hex.encode([instruction])) \(kind): \(error)") }
            }
        }
        // The PIN counter was not touched by any of it.
        fixture.card.faults = .none
        #expect(try fixture.session.passwordStatus().retriesPW1 == 3)
    }

    @Test("the trace shows PIN commands by their header only")
    func traceHidesPINs() throws {
        let fixture = try Fixture()
        try fixture.session.select()
        try fixture.session.verify(.pw1, pin: secret("123456"))
        _ = try? fixture.session.changeReferenceData(.pw1, current: secret("123456"), new: secret("654321"))
        let pinHex = Hex.encode(Array("123456".utf8), separator: " ")
        let newHex = Hex.encode(Array("654321".utf8), separator: " ")
        #expect(fixture.traceLines.contains("> 00 20 00 82 [sensitive]"))
        #expect(fixture.traceLines.contains("> 00 24 00 81 [sensitive]"))
        #expect(!fixture.traceLines.contains { $0.contains(pinHex) || $0.contains(newHex) })
        #expect(!fixture.traceLines.contains { $0.contains("313233343536") })
    }

    @Test("APDUs per token verify: select, data, verify, decipher")
    func apduCount() throws {
        let fixture = try Fixture()
        let cardKey = try fixture.provisionDecryptionKey()
        fixture.card.reset()
        let ephemeral = try X25519.generateKeyPair()
        let before = fixture.connection.counter.headers.count

        // The flow the service runs: serial and tries from 6E, then VERIFY and PSO:DECIPHER.
        try fixture.session.select()
        let data = try fixture.session.applicationRelatedData()
        #expect(data.passwordStatus.retriesPW1 == 3)
        try fixture.session.verify(.pw1, pin: secret("123456"))
        let shared = try fixture.session.decipher(ephemeralPublicKey: ephemeral.publicKey)
        let flow = Array(fixture.connection.counter.instructions[before...])
        #expect(flow == [0xA4, 0xCA, 0x20, 0x2A])

        // With the empty-VERIFY tries query as well: still at most 5.
        fixture.card.reset()
        let start = fixture.connection.counter.headers.count
        try fixture.session.select()
        _ = try fixture.session.applicationRelatedData()
        #expect(try fixture.session.retriesLeft(.pw1) == 3)
        try fixture.session.verify(.pw1, pin: secret("123456"))
        _ = try fixture.session.decipher(ephemeralPublicKey: ephemeral.publicKey)
        #expect(fixture.connection.counter.headers.count - start == 5)

        let local = try X25519.sharedSecret(secretKey: ephemeral.secretKey, peerPublicKey: cardKey)
        let equal = shared.isEqual(to: local)
        #expect(equal)
    }
}
