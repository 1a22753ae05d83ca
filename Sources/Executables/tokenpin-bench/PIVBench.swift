import FoundationEssentials
import TokenpinAPDU
import TokenpinCore

/// The APDUs a PIV token verify sends, for `bench --token` to send them bare: SELECT, GET DATA CHUID (and for a
/// card named by its YubiKey serial GET VERSION and GET SERIAL), the tries query, VERIFY, GENERAL AUTHENTICATE.
enum PIVBench {
    /// The commands before VERIFY and after it for a PIV binding (GENERAL AUTHENTICATE, chained for RSA); nil
    /// for a binding that is not PIV or names a slot or algorithm the token does not use.
    static func commands(for binding: TokenBinding) -> (beforeVerify: [[UInt8]], afterVerify: [[UInt8]])? {
        guard binding.application == "piv", let slotName = binding.slot, let slot = UInt8(slotName, radix: 16) else {
            return nil
        }
        let algorithm: UInt8
        let challengeTag: UInt32
        switch binding.algorithm {
        case "nistp256": (algorithm, challengeTag) = (0x11, 0x85)
        case "nistp384": (algorithm, challengeTag) = (0x14, 0x85)
        case "rsa2048": (algorithm, challengeTag) = (0x07, 0x81)
        default: return nil
        }
        var before: [[UInt8]] = [
            CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xA0, 0x00, 0x00, 0x03, 0x08], le: 256).encoded(),
            CommandAPDU(ins: 0xCB, p1: 0x3F, p2: 0xFF, data: [0x5C, 0x03, 0x5F, 0xC1, 0x02], le: 256).encoded(),
        ]
        if binding.serial.hasPrefix("piv-serial:") {
            before.append(CommandAPDU(ins: 0xFD, p1: 0x00, p2: 0x00, le: 256).encoded())
            before.append(CommandAPDU(ins: 0xF8, p1: 0x00, p2: 0x00, le: 256).encoded())
        }
        before.append(CommandAPDU(ins: 0x20, p1: 0x00, p2: 0x80).encoded())
        let template = TLV(
            tag: 0x7C,
            children: [TLV(tag: 0x82, value: []), TLV(tag: challengeTag, value: [UInt8](binding.ephemeralPublicKey))]
        ).encoded
        var after: [[UInt8]] = []
        var offset = 0
        while template.count - offset > CommandAPDU.shortMaxData {
            after.append(
                CommandAPDU(
                    cla: CommandAPDU.chainingBit, ins: 0x87, p1: algorithm, p2: slot,
                    data: Array(template[offset..<(offset + CommandAPDU.shortMaxData)])
                ).encoded())
            offset += CommandAPDU.shortMaxData
        }
        after.append(
            CommandAPDU(ins: 0x87, p1: algorithm, p2: slot, data: Array(template[offset...]), le: 256).encoded())
        return (before, after)
    }

    /// VERIFY `00 20 00 80 08` with the PIN padded with `FF` to 8 bytes; the caller wipes it.
    static func verifyCommand(_ pin: borrowing SecretBytes) -> [UInt8] {
        pin.withUnsafeBytes { bytes in
            [0x00, 0x20, 0x00, 0x80, 0x08] + Array(bytes) + [UInt8](repeating: 0xFF, count: max(0, 8 - bytes.count))
        }
    }
}
