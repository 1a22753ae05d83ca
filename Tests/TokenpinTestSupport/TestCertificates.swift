package import TokenpinAPDU

// X.509 certificates for the PIV tests: what yubico-piv-tool writes into a slot's certificate object, minimal
// (the parser reads only the SubjectPublicKeyInfo; the signature is not checked).

/// A minimal X.509 certificate (DER) around a SubjectPublicKeyInfo; the signature is not checked by the parser.
package func certificate(spki: TLV) -> [UInt8] {
    let sha256WithECDSA = TLV(
        tag: 0x30, children: [TLV(tag: 0x06, value: [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02])])
    let name = TLV(
        tag: 0x30,
        children: [
            TLV(
                tag: 0x31,
                children: [
                    TLV(
                        tag: 0x30,
                        children: [
                            TLV(tag: 0x06, value: [0x55, 0x04, 0x03]),
                            TLV(tag: 0x0C, value: Array("tokenpin test".utf8)),
                        ])
                ])
        ])
    let validity = TLV(
        tag: 0x30,
        children: [
            TLV(tag: 0x17, value: Array("260101000000Z".utf8)),
            TLV(tag: 0x17, value: Array("360101000000Z".utf8)),
        ])
    let tbs = TLV(
        tag: 0x30,
        children: [
            TLV(tag: 0xA0, children: [TLV(tag: 0x02, value: [0x02])]), TLV(tag: 0x02, value: [0x01]),
            sha256WithECDSA, name, validity, name, spki,
        ])
    return TLV(tag: 0x30, children: [tbs, sha256WithECDSA, TLV(tag: 0x03, value: [0x00, 0x30, 0x00])]).encoded
}

package func ecSPKI(_ point: [UInt8], curveOID: [UInt8]) -> TLV {
    TLV(
        tag: 0x30,
        children: [
            TLV(
                tag: 0x30,
                children: [
                    TLV(tag: 0x06, value: [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]),
                    TLV(tag: 0x06, value: curveOID),
                ]),
            TLV(tag: 0x03, value: [0x00] + point),
        ])
}

package func rsaSPKI(modulus: [UInt8], exponent: [UInt8]) -> TLV {
    let integer = { (value: [UInt8]) in
        TLV(tag: 0x02, value: value.first.map { $0 & 0x80 != 0 } ?? false ? [0x00] + value : value)
    }
    let key = TLV(tag: 0x30, children: [integer(modulus), integer(exponent)])
    return TLV(
        tag: 0x30,
        children: [
            TLV(
                tag: 0x30,
                children: [
                    TLV(tag: 0x06, value: [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]),
                    TLV(tag: 0x05, value: []),
                ]),
            TLV(tag: 0x03, value: [0x00] + key.encoded),
        ])
}
