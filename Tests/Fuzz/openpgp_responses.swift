// Fuzz target for the client's parsing of OpenPGP card answers (a hostile or broken card): the data objects
// (application related data, AID, PW status, extended capabilities and length information, algorithm attributes,
// public keys, KDF-DO) parsed straight from each part of the input, then an OpenPGPSession over a connection whose
// answers are those parts in order (see chunks.swift, fuzzed_card.swift), running what tokenpin runs against a card.
// Nothing may trap or loop; algorithm attributes that parse encode to the same value.
// Built by Tests/Fuzz/fuzz.sh against TokenpinAPDU, TokenpinCore and TokenpinOpenPGP.
import TokenpinAPDU
import TokenpinCore
import TokenpinOpenPGP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOpenPGPResponses(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let parts = fuzzParts(data, size)
    for part in parts {
        let value = part.count >= 2 ? Array(part.dropLast(2)) : part
        _ = try? ApplicationRelatedData(parsing: value)
        _ = try? ApplicationIdentifier(parsing: value)
        _ = try? PasswordStatus(parsing: value)
        _ = try? ExtendedCapabilities(parsing: value)
        _ = try? ExtendedLengthInformation(parsing: value)
        _ = (try? CardPublicKey(parsing: value))?.curve25519
        if let derivation = try? KeyDerivation.parse(value) {
            // A hostile KDF-DO is bounded (count, salt), so hashing with it ends.
            var bytes: [UInt8] = [0x31]
            _ = try? derivation.digest(of: SecretBytes(consuming: &bytes), for: .adminPIN)
        }
        if let attributes = try? AlgorithmAttributes(parsing: value) {
            precondition(
                (try? AlgorithmAttributes(parsing: attributes.encoded)) == attributes,
                "algorithm attributes changed through encode and parse")
        }
    }
    let card = FuzzedCardConnection(answers: parts)
    let session = OpenPGPSession(connection: card)
    _ = try? session.select()
    if let related = try? session.applicationRelatedData() {
        _ = related.hasCurve25519DecryptionKey
        _ = related.aid.description
    }
    _ = try? session.retriesLeft(.pw1)
    var pinBytes: [UInt8] = Array("123456".utf8)
    let pin = SecretBytes(consuming: &pinBytes)
    _ = try? session.verify(.pw1, pin: pin)
    _ = try? session.publicKey(for: .decryption)
    _ = try? session.generateKey(for: .decryption)
    _ = try? session.decipher(ephemeralPublicKey: [UInt8](repeating: 0x09, count: 32))
    _ = try? session.decipher(ecdhPoint: [0x04] + [UInt8](repeating: 0x09, count: 64))
    _ = try? session.decipher(rsaCryptogram: [UInt8](repeating: 0x09, count: 256))
    if let related = try? ApplicationRelatedData(parsing: parts.first ?? []) {
        _ = try? session.verify(.pw1, pin: pin, keyDerivation: session.keyDerivation(related))
    }
    _ = try? session.getData(0x6E)
    return 0
}
