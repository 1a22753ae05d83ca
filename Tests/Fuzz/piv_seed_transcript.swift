// Writes the seeds of the piv and certificate fuzz targets from real sessions: a PIVSession drives the simulated
// card's PIV application (a YubiKey and a PIV card alone) through what tokenpin does to one (open, the slot's
// content, the management key, key generation, ECDH and RSA decryption with their chained answers, the PIN's tries,
// change and unblock), and every answer is recorded, in the length-prefixed form of chunks.swift, one file per flow.
//
// Linked like a fuzz target (the libraries carry the fuzzer's instrumentation), so it runs once on any input:
// `TOKENPIN_SEED_DIR=DIR ./piv-seed-transcript /dev/null`. Tests/Fuzz/fuzz.sh builds and runs it, with
// seed_support.swift.
import Foundation
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator

let managementKey: [UInt8] = Array(1...8) + Array(1...8) + Array(1...8)

func bytes(_ value: [UInt8]) -> SecretBytes {
    var copy = value
    return SecretBytes(consuming: &copy)
}

/// The flows, each on a fresh factory-new card of each profile.
let flows: [(name: String, run: @Sendable (RecordingConnection) throws -> Void)] = [
    (
        "open",
        { connection in
            let card = try PIVCard.open(connection)
            _ = try card.transaction { session throws(PIVError) in try card.content(of: .keyManagement, session) }
        }
    ),
    (
        "ecdh",
        { connection in
            let session = PIVSession(connection: connection)
            try session.select()
            _ = try? session.chuid()
            _ = try? session.discovery()
            _ = try? session.version()
            _ = try? session.serial()
            try session.authenticate(managementKey: bytes(managementKey), algorithm: .tripleDES)
            let key = try session.generateKey(in: .keyManagement, algorithm: .eccP256)
            _ = try? session.metadata(for: .keyManagement)
            try session.verify(pin: secret("123456"))
            guard case .ecc(_, let point) = key else { return }
            _ = try session.sharedSecret(slot: .keyManagement, algorithm: .eccP256, peerPoint: point)
        }
    ),
    (
        "rsa",
        { connection in
            let session = PIVSession(connection: connection)
            try session.select()
            try session.authenticate(managementKey: bytes(managementKey), algorithm: .tripleDES)
            let key = try session.generateKey(in: .keyManagement, algorithm: .rsa2048)
            guard case .rsa(let modulus, let exponent) = key else { return }
            let cryptogram = try RSAKeys.encrypt(
                bytes([UInt8](repeating: 0x42, count: 32)), modulus: modulus, publicExponent: exponent)
            try session.verify(pin: secret("123456"))
            _ = try session.decrypt(slot: .keyManagement, cryptogram: cryptogram)
        }
    ),
    (
        "pin",
        { connection in
            let session = PIVSession(connection: connection)
            try session.select()
            _ = try session.pinStatus()
            _ = try? session.verify(pin: secret("000000"))
            _ = try? session.retries(puk: false)
            try session.changeReferenceData(current: secret("123456"), new: secret("654321"))
            try session.unblockPIN(puk: secret("12345678"), newPIN: secret("123456"))
        }
    ),
]

nonisolated(unsafe) var written = false  // libFuzzer calls the entry point on one thread

@_cdecl("LLVMFuzzerTestOneInput")
public func writePIVSeedTranscripts(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard !written, let directory = ProcessInfo.processInfo.environment["TOKENPIN_SEED_DIR"] else { return 0 }
    written = true
    for profile in [SimulatedProfile.yubikey, .pivCard] {
        for flow in flows {
            do {
                let card = try SimulatedCard(stateFile: nil, serial: 0x00C0_FFEE, profile: profile)
                let connection = RecordingConnection(SimulatedCardConnection(card: card, sleep: { _ in }))
                try flow.run(connection)
                try framed(connection.answers).write(
                    to: URL(fileURLWithPath: "\(directory)/answers-\(profile.rawValue)-\(flow.name)"))
            } catch {
                print("seed flow \(profile.rawValue) \(flow.name) failed: \(error)")
                exit(1)
            }
        }
    }
    return 0
}
