import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore

@testable import TokenpinSimulator

/// A factory-new in-memory card behind a connection, with helpers that speak OpenPGP.
final class Harness {
    let card: SimulatedCard
    let connection: SimulatedCardConnection
    /// The delays the card asked for; tests never really sleep.
    let sleeps = SleepLog()

    init(card: SimulatedCard? = nil, select: Bool = true) throws {
        let card = try card ?? SimulatedCard(stateFile: nil, serial: 0x1234_5678)
        self.card = card
        let sleeps = self.sleeps
        connection = SimulatedCardConnection(card: card, sleep: { sleeps.durations.append($0) })
        if select { try requireSuccess(self.select()) }
    }

    /// Sends raw hex and returns the raw response.
    func raw(_ hex: String) -> [UInt8] { card.process(Hex.decode(hex) ?? []) }

    func send(_ command: CommandAPDU) throws -> ResponseAPDU { try connection.send(command) }

    func send(_ ins: UInt8, _ p1: UInt8, _ p2: UInt8, _ data: [UInt8] = [], le: Int? = nil) throws -> ResponseAPDU {
        try connection.send(CommandAPDU(ins: ins, p1: p1, p2: p2, data: data, le: le))
    }

    func select() throws -> StatusWord {
        try send(CardInstruction.select, 0x04, 0x00, CardProfile.applicationPrefix).statusWord
    }

    func getData(_ tag: UInt32) throws -> ResponseAPDU {
        try send(CardInstruction.getData, UInt8(tag >> 8), UInt8(tag & 0xFF), le: 256)
    }

    func verify(_ p2: UInt8, _ pin: String) throws -> StatusWord {
        try send(CardInstruction.verify, 0x00, p2, Array(pin.utf8)).statusWord
    }

    func putData(_ tag: UInt32, _ value: [UInt8]) throws -> StatusWord {
        try send(CardInstruction.putData, UInt8(tag >> 8), UInt8(tag & 0xFF), value).statusWord
    }

    func generate(_ slot: KeySlot) throws -> ResponseAPDU {
        try send(CardInstruction.generateKeyPair, 0x80, 0x00, [slot.crtTag, 0x00], le: 256)
    }

    func readPublicKey(_ slot: KeySlot) throws -> ResponseAPDU {
        try send(CardInstruction.generateKeyPair, 0x81, 0x00, [slot.crtTag, 0x00], le: 256)
    }

    /// Switches the decryption key to cv25519 and generates it, as gpg and tokenpin do; returns the public key.
    func makeCurve25519DecryptionKey() throws -> [UInt8] {
        try requireSuccess(verify(0x83, "12345678"))
        try requireSuccess(putData(0xC2, AlgorithmAttributes.cv25519.bytes))
        let response = try generate(.decryption)
        try requireSuccess(response.statusWord)
        return try publicKey(in: response.data)
    }

    func publicKey(in template: [UInt8]) throws -> [UInt8] {
        guard let point = try TLV.find(0x86, in: template) else { throw HarnessError("no 86 in the key template") }
        return point.value
    }

    func decipher(_ point: [UInt8]) throws -> ResponseAPDU {
        let template = TLV(tag: 0xA6, children: [TLV(tag: 0x7F49, children: [TLV(tag: 0x86, value: point)])])
        return try send(CardInstruction.performSecurityOperation, 0x80, 0x86, template.encoded, le: 256)
    }
}

final class SleepLog {
    var durations: [Duration] = []
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Fails unless the status word is `9000`.
func requireSuccess(_ statusWord: StatusWord, sourceLocation: SourceLocation = #_sourceLocation) throws {
    guard statusWord == .success else { throw HarnessError("expected 9000, got \(statusWord) at \(sourceLocation)") }
}

/// An X25519 key pair in plain bytes, for the host side of a test.
func hostKeyPair() throws -> (secret: [UInt8], publicKey: [UInt8]) {
    let secret = SecureRandom.bytes(32)
    let publicKey = try X25519.publicKey(for: guardedCopy(secret))
    return (secret, publicKey)
}

func sharedSecret(_ secret: [UInt8], _ peer: [UInt8]) throws -> [UInt8] {
    try X25519.sharedSecret(secretKey: guardedCopy(secret), peerPublicKey: peer).withUnsafeBytes { Array($0) }
}
