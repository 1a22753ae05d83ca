// Fuzz target for the client's parsing of PIV card answers (a hostile or broken card): the CHUID, YubiKey metadata,
// public key templates and certificates parsed straight from each part of the input, then a PIVSession and a
// PIVCard over a connection whose answers are those parts in order (chunks.swift, fuzzed_card.swift), running what
// tokenpin runs against a card: SELECT, GET DATA (CHUID, discovery, certificates), GET VERSION, GET SERIAL, GET
// METADATA, the PIN's tries and VERIFY, GENERAL AUTHENTICATE for ECDH and RSA with answers chained through 61xx, the
// management key's challenge-response, GENERATE, the slot contents. Nothing may trap or loop.
// Built by Tests/Fuzz/fuzz.sh against TokenpinAPDU, TokenpinCore, TokenpinCardCrypto and TokenpinPIV.
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPIV

func secret(_ bytes: [UInt8]) -> SecretBytes {
    var copy = bytes
    return SecretBytes(consuming: &copy)
}

/// A P-256 point for the ECDH commands (the generator's multiple the card would be asked about).
let peerPoint: [UInt8] = {
    var scalar = [UInt8](repeating: 0, count: 31) + [7]
    return (try? EllipticCurveDH.publicPoint(for: SecretBytes(consuming: &scalar), on: .nistP256))
        ?? [0x04] + [UInt8](repeating: 1, count: 64)
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPIVResponses(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let parts = fuzzParts(data, size)
    for part in parts {
        let value = part.count >= 2 ? Array(part.dropLast(2)) : part
        _ = try? PIVCHUID(parsing: value)
        _ = try? PIVSlotMetadata(parsing: value)
        for algorithm in [PIVAlgorithm.eccP256, .eccP384, .rsa2048] {
            _ = try? PIVPublicKey(templateContent: value, algorithm: algorithm)
        }
        if let key = try? PIVPublicKey(certificate: value) {
            _ = key.algorithm
            _ = try? PIVCard.keyIdentity(key)
        }
        _ = PIVPublicKey.subjectCommonName(certificate: value)
    }
    let session = PIVSession(connection: FuzzedCardConnection(answers: parts))
    _ = try? session.select()
    _ = try? session.chuid()
    _ = try? session.discovery()
    _ = try? session.version()
    _ = try? session.serial()
    _ = try? session.metadata(for: .keyManagement)
    _ = try? session.retries(puk: true)
    _ = try? session.managementKeyMetadata()
    _ = try? session.pinStatus()
    _ = try? session.verify(pin: secret(Array("123456".utf8)))
    _ = try? session.certificate(in: .keyManagement)
    _ = try? session.publicKey(in: .keyManagement)
    _ = try? session.sharedSecret(slot: .keyManagement, algorithm: .eccP256, peerPoint: peerPoint)
    _ = try? session.decrypt(slot: .keyManagement, cryptogram: [UInt8](repeating: 0x5A, count: 256))
    _ = try? session.authenticate(
        managementKey: secret(Array(1...8) + Array(1...8) + Array(1...8)), algorithm: .tripleDES)
    _ = try? session.generateKey(in: .keyManagement, algorithm: .eccP256)
    _ = try? session.generateKey(in: .keyManagement, algorithm: .rsa2048)
    _ = try? session.unblockPIN(puk: secret(Array("12345678".utf8)), newPIN: secret(Array("123456".utf8)))
    // The application opened as the token opens it, then every slot's content read.
    if let card = try? PIVCard.open(FuzzedCardConnection(answers: parts)) {
        _ = card.identity
        _ = card.label
        for slot in [PIVSlot.keyManagement, .authentication] + (1...3).compactMap(PIVSlot.retired) {
            _ = try? card.transaction { session throws(PIVError) in try card.content(of: slot, session) }
        }
        card.close()
    }
    return 0
}
