package import TokenpinAPDU

/// A card's answer to reset, split into the parts tokenpin reads.
///
/// ISO/IEC 7816-3, §8.2 (structure: TS, T0, interface bytes, historical bytes, TCK) and ISO/IEC 7816-4,
/// §8.1.1 (historical bytes, card capabilities). The ATR comes from the card through pcscd, so parsing is
/// defensive: anything that does not add up gives nil, never a crash.
package struct ATR: Sendable, Equatable {
    /// The whole ATR.
    package let bytes: [UInt8]
    /// The historical bytes (up to 15).
    package let historicalBytes: [UInt8]
    /// The transmission protocols the card offers (`0` for T=0, `1` for T=1, ...).
    package let protocols: [Int]

    /// Parses an ATR; nil when its interface bytes announce more than it holds.
    package init?(_ bytes: [UInt8]) {
        guard bytes.count >= 2, bytes[0] == 0x3B || bytes[0] == 0x3F else { return nil }
        let historicalCount = Int(bytes[1] & 0x0F)
        var indicator = bytes[1] >> 4
        var index = 2
        var protocols: [Int] = []
        for _ in 0..<16 {
            // TAi, TBi, TCi are present when bits 1, 2, 3 of the indicator are set; bit 4 announces TDi.
            index += Int(indicator & 1) + Int((indicator >> 1) & 1) + Int((indicator >> 2) & 1)
            guard indicator & 0x08 != 0 else { break }
            guard index < bytes.count else { return nil }
            let td = bytes[index]
            index += 1
            let offered = Int(td & 0x0F)
            if !protocols.contains(offered) { protocols.append(offered) }
            indicator = td >> 4
        }
        guard index + historicalCount <= bytes.count else { return nil }
        self.bytes = bytes
        self.historicalBytes = Array(bytes[index..<(index + historicalCount)])
        self.protocols = protocols.isEmpty ? [0] : protocols
    }

    /// What the historical bytes announce about long APDUs; nil when they say nothing.
    package var lengthCapabilities: LengthCapabilities? {
        HistoricalBytes.lengthCapabilities(historicalBytes)
    }
}
