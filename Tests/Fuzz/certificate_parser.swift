// Fuzz target for the certificates read from a PIV slot (a hostile card's DER): the TLV walk to the
// subjectPublicKeyInfo, the key it names (P-256, P-384, RSA), the subject's common name, the key's identity, and the
// certificate object around it (`70`, `71`, `FE`) as a slot's GET DATA answers it. Nothing may trap or loop; a key
// that parses is the same key when read again.
// Built by Tests/Fuzz/fuzz.sh against TokenpinAPDU, TokenpinCore, TokenpinCardCrypto and TokenpinPIV.
import TokenpinAPDU
import TokenpinPIV

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCertificate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let der = Array(UnsafeBufferPointer(start: data, count: size))
    if let key = try? PIVPublicKey(certificate: der) {
        precondition((try? PIVPublicKey(certificate: der)) == key, "a certificate's key changed when read again")
        _ = key.algorithm
        _ = try? PIVCard.keyIdentity(key)
    }
    _ = PIVPublicKey.subjectCommonName(certificate: der)
    // The same bytes as the slot's certificate object, through a session: `53 { 70 DER, 71 00, FE 00 }`.
    let object = TLV(tag: 0x53, children: [TLV(tag: 0x70, value: der), TLV(tag: 0x71, value: [0x00])]).encoded
    let session = PIVSession(connection: FuzzedCardConnection(answers: [object + [0x90, 0x00]]))
    _ = try? session.certificate(in: .keyManagement)
    return 0
}
