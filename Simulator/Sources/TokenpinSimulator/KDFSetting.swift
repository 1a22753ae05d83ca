import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore

/// A KDF-DO (`F9`) the card accepts, and the PIN references it sets. OpenPGP card 3.4.1, §4.3.2.
///
/// Off (`81 01 00`): the factory PINs `123456` and `12345678`. On (`81 01 03`, hash `82` 08 or 0A, count `83`
/// of 4 bytes, 8-byte salts `84` and optionally `85`/`86`): PW1 becomes `87` (the digest of `123456`, which
/// the host sends), PW3 `88` or, when absent, the digest of `12345678` computed here.
struct KDFSetting {
    /// `81 01 00`: no KDF, what a card answers before any was written.
    static let off: [UInt8] = [0x81, 0x01, 0x00]

    let userPIN: [UInt8]
    let adminPIN: [UInt8]

    init?(_ bytes: [UInt8]) {
        guard let objects = try? TLV.parseAll(bytes) else { return nil }
        func value(_ tag: UInt32) -> [UInt8]? { objects.first { $0.tag == tag }?.value }
        switch value(0x81) {
        case [0x00]?:
            userPIN = Array("123456".utf8)
            adminPIN = Array("12345678".utf8)
        case [0x03]?:
            let hash: IteratedSaltedS2K.Hash
            switch value(0x82) {
            case [0x08]?: hash = .sha256
            case [0x0A]?: hash = .sha512
            default: return nil
            }
            guard let count = value(0x83), count.count == 4, let salt = value(0x84), salt.count == 8,
                let userDigest = value(0x87), userDigest.count == hash.digestLength
            else { return nil }
            for tag: UInt32 in [0x85, 0x86] where value(tag).map({ $0.count != 8 }) ?? false { return nil }
            userPIN = userDigest
            if let adminDigest = value(0x88) {
                guard adminDigest.count == hash.digestLength else { return nil }
                adminPIN = adminDigest
            } else {
                let bytes = count.reduce(0) { $0 << 8 | Int($1) }
                guard
                    let digest = try? IteratedSaltedS2K.derive(
                        pin: guardedCopy(Array("12345678".utf8)),
                        salt: value(0x86) ?? salt, count: bytes, hash: hash)
                else { return nil }
                adminPIN = digest.withUnsafeBytes { Array($0) }
            }
        default:
            return nil
        }
    }
}
