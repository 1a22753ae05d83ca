// Writes the seeds of the simulator and OpenPGP fuzz targets from a real session: an OpenPGPSession drives the
// simulated card through what tokenpin does to a card (select, application related data, VERIFY right and wrong,
// the admin PIN, key generation, reading the public key, PSO:DECIPHER, changing and unblocking the card PIN) and
// every command and answer is recorded. The commands become simulator seeds, the answers OpenPGP seeds, both in
// the length-prefixed form of chunks.swift, one file per flow.
//
// It is linked like a fuzz target (the libraries carry the fuzzer's instrumentation), so it runs once on any
// input: `TOKENPIN_SEED_DIR=DIR ./seed-transcript /dev/null`. Tests/Fuzz/fuzz.sh builds and runs it, with
// seed_support.swift.
import Foundation
import TokenpinAPDU
import TokenpinCore
import TokenpinOpenPGP
import TokenpinSimulator

/// The flows, each on a fresh factory-new card.
let flows: [(name: String, run: @Sendable (OpenPGPSession) throws -> Void)] = [
    (
        "select-ard",
        { session in
            try session.select()
            _ = try session.applicationRelatedData()
            _ = try session.retriesLeft(.pw1)
        }
    ),
    (
        "verify",
        { session in
            try session.select()
            _ = try? session.verify(.pw1, pin: secret("000000"))
            try session.verify(.pw1, pin: secret("123456"))
            _ = try session.passwordStatus()
        }
    ),
    (
        "generate-decipher",
        { session in
            try session.select()
            _ = try session.applicationRelatedData()
            try session.verify(.pw3, pin: secret("12345678"))
            try session.setAlgorithmAttributes(.cv25519, for: .decryption)
            let key = try session.generateKey(for: .decryption)
            _ = try session.publicKey(for: .decryption)
            try session.verify(.pw1, pin: secret("123456"))
            _ = try session.decipher(ephemeralPublicKey: key.curve25519 ?? [UInt8](repeating: 9, count: 32))
            _ = try session.applicationRelatedData()
        }
    ),
    (
        "change-unblock",
        { session in
            try session.select()
            try session.changeReferenceData(.pw1, current: secret("123456"), new: secret("654321"))
            try session.verify(.pw3, pin: secret("12345678"))
            try session.setResettingCode(secret("87654321"))
            try session.resetRetryCounter(resetCode: secret("87654321"), newPIN: secret("123456"))
            try session.resetRetryCounter(newPIN: secret("112233"))
            _ = try session.getData(0x6E)
        }
    ),
]

nonisolated(unsafe) var written = false  // libFuzzer calls the entry point on one thread

@_cdecl("LLVMFuzzerTestOneInput")
public func writeSeedTranscripts(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard !written, let directory = ProcessInfo.processInfo.environment["TOKENPIN_SEED_DIR"] else { return 0 }
    written = true
    for flow in flows {
        do {
            let card = try SimulatedCard(stateFile: nil, serial: 0x0000_1234)
            let connection = RecordingConnection(SimulatedCardConnection(card: card, sleep: { _ in }))
            try flow.run(OpenPGPSession(connection: connection))
            try framed(connection.commands).write(to: URL(fileURLWithPath: "\(directory)/commands-\(flow.name)"))
            try framed(connection.answers).write(to: URL(fileURLWithPath: "\(directory)/answers-\(flow.name)"))
        } catch {
            print("seed flow \(flow.name) failed: \(error)")
            exit(1)
        }
    }
    return 0
}
