/// Reading the historical bytes of an ATR.
public enum HistoricalBytes {
    /// The card capabilities (compact-TLV tag `7`, third software function table) as length capabilities.
    ///
    /// ISO/IEC 7816-4, §8.1.1.2.7: bit 8 of the third byte is command chaining, bit 7 extended Lc and Le.
    /// Returns nil when the category indicator is unknown, the objects do not parse or there is no
    /// capabilities object of at least three bytes.
    public static func lengthCapabilities(_ historical: [UInt8]) -> LengthCapabilities? {
        guard let category = historical.first else { return nil }
        let objects: ArraySlice<UInt8>
        switch category {
        case 0x00:
            // Compact-TLV objects, then a three-byte status indicator.
            guard historical.count >= 4 else { return nil }
            objects = historical[1..<(historical.count - 3)]
        case 0x80:
            objects = historical[1...]
        default:
            return nil
        }
        var index = objects.startIndex
        while index < objects.endIndex {
            let tag = objects[index] >> 4
            let length = Int(objects[index] & 0x0F)
            index += 1
            guard length <= objects.endIndex - index else { return nil }
            if tag == 0x7, length >= 3 {
                let third = objects[index + 2]
                // The sizes stay at the short-APDU defaults until the card states its buffers (for an
                // OpenPGP card, extended length information `7F66`).
                return LengthCapabilities(extendedLength: third & 0x40 != 0, commandChaining: third & 0x80 != 0)
            }
            index += length
        }
        return nil
    }
}
