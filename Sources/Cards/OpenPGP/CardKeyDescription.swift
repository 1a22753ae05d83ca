import FoundationEssentials
internal import TokenpinAPDU

extension DataObject {
    /// `CD`: the generation dates of the three keys, 4 bytes each (seconds since 1970, big-endian).
    package static let keyGenerationDates: UInt32 = 0xCD
}

/// What a key slot holds, as the card describes it in its application related data: what a person must see
/// before an operation replaces it.
///
/// OpenPGP card 3.4.1, §4.4.3.7 (fingerprints `C5`), §4.4.3.8 (key information `DE`), §4.4.3.10 (algorithm
/// attributes `C1`-`C3`) and `CD` (generation dates).
package struct CardKeyDescription: Sendable, Equatable, CustomStringConvertible {
    /// The slot.
    package var key: KeyReference
    /// The algorithm the slot is set up for.
    package var algorithm: AlgorithmAttributes?
    /// The key's fingerprint, when the card has one.
    package var fingerprint: [UInt8]?
    /// When the key was generated or imported, when the card says.
    package var created: Date?
    /// Whether the slot holds a key: from the key information when the card gives it, else a fingerprint or a
    /// generation date is taken as a key (a key is never assumed absent when the card hints at one).
    package var isPresent: Bool

    /// The slot's description from the card's data.
    package init(_ key: KeyReference, in data: ApplicationRelatedData) {
        self.key = key
        algorithm = data.algorithmAttributes[key]
        fingerprint = data.fingerprints[key]
        created = data.generationTimes[key].map { Date(timeIntervalSince1970: TimeInterval($0)) }
        if let status = data.keyStatus[key], status == .notPresent {
            isPresent = fingerprint != nil || created != nil
        } else if data.keyStatus[key] != nil {
            isPresent = true
        } else {
            isPresent = fingerprint != nil || created != nil
        }
    }

    /// "ECDH cv25519, fingerprint 1A2B 3C4D ..., created 2024-05-01 10:00 UTC".
    package var description: String {
        var parts = [algorithm.map { "\($0)" } ?? "unknown algorithm"]
        parts.append(fingerprint.map { "fingerprint " + Self.grouped($0) } ?? "no fingerprint")
        parts.append(created.map { "created " + Self.format($0) } ?? "creation date unknown")
        return parts.joined(separator: ", ")
    }

    /// A fingerprint as gpg shows one: groups of four hex digits.
    static func grouped(_ bytes: [UInt8]) -> String {
        let hex = Hex.encode(bytes)
        return stride(from: 0, to: hex.count, by: 4).map { start in
            let from = hex.index(hex.startIndex, offsetBy: start)
            return String(hex[from..<hex.index(from, offsetBy: min(4, hex.count - start))])
        }.joined(separator: " ")
    }

    /// `2023-09-12 06:06 UTC`: the ISO 8601 form (always UTC) to the minute.
    static func format(_ date: Date) -> String {
        let iso = date.formatted(Date.ISO8601FormatStyle())  // 2023-09-12T06:06:56Z
        return String(iso.prefix(16)).replacing("T", with: " ") + " UTC"
    }

    /// The generation times in a `CD` object: three 4-byte times; zero means none.
    static func generationTimes(_ value: [UInt8]?) throws(APDUError) -> PerKey<UInt32> {
        guard let value else { return [:] }
        guard value.count >= 12, value.count % 4 == 0 else {
            throw APDUError(.invalidLength, "generation dates of \(value.count) bytes, expected 3 × 4")
        }
        var times: PerKey<UInt32> = [:]
        for key in KeyReference.allCases {
            let start = key.fingerprintIndex * 4
            let seconds = value[start..<(start + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if seconds != 0 { times[key] = seconds }
        }
        return times
    }
}
