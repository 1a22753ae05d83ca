/// Bech32 (BIP 173): a human-readable part, `1`, and 5-bit groups with a six-character checksum.
///
/// Not cryptography: an encoding with an error-detecting checksum. age writes its recipients (`age1…`) and
/// identities (`AGE-PLUGIN-NAME-1…`) this way, without BIP 173's limit of 90 characters; `decode` takes the limit
/// as a parameter (nil: none). Bech32m (BIP 350) is a different checksum and is not accepted.
package enum Bech32 {
    /// Why a string is not Bech32.
    package enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// Longer than the limit given.
        case tooLong(Int)
        /// Upper and lower case letters together.
        case mixedCase
        /// No `1` separator, or an empty human-readable part.
        case noSeparator
        /// A human-readable part character outside 33...126.
        case humanPartCharacter
        /// A data character outside Bech32's 32.
        case dataCharacter(Character)
        /// Fewer than six characters after the separator.
        case tooShort
        /// The checksum does not match.
        case checksum
        /// 5-bit groups that are no whole bytes (more than 4 bits of padding, or padding that is not zero).
        case padding

        package var description: String {
            switch self {
            case .tooLong(let limit): "longer than \(limit) characters"
            case .mixedCase: "upper and lower case mixed"
            case .noSeparator: "no human-readable part and '1' separator"
            case .humanPartCharacter: "a character outside printable ASCII in the human-readable part"
            case .dataCharacter(let character): "'\(character)' is not a Bech32 character"
            case .tooShort: "too short for its checksum"
            case .checksum: "the checksum does not match (a typo, or a truncated line)"
            case .padding: "the data is not whole bytes"
            }
        }
    }

    static let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    static let values: [Int8] = {
        var table = [Int8](repeating: -1, count: 128)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = Int8(index) }
        return table
    }()

    static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var check: UInt32 = 1
        for value in values {
            let top = check >> 25
            check = (check & 0x1ff_ffff) << 5 ^ UInt32(value)
            for index in 0..<5 where (top >> index) & 1 == 1 { check ^= generator[index] }
        }
        return check
    }

    static func expand(_ human: [UInt8]) -> [UInt8] {
        human.map { $0 >> 5 } + [0] + human.map { $0 & 31 }
    }

    static func checksum(_ human: [UInt8], _ groups: [UInt8]) -> [UInt8] {
        let check = polymod(expand(human) + groups + [0, 0, 0, 0, 0, 0]) ^ 1
        return (0..<6).map { UInt8((check >> (5 * (5 - $0))) & 31) }
    }

    /// Encodes 5-bit `groups` (each below 32) under `human` (lower case, as BIP 173 writes it).
    package static func encode(human: String, groups: [UInt8]) -> String {
        let lowered = Array(human.lowercased().utf8)
        let characters = (groups + checksum(lowered, groups)).map { alphabet[Int($0 & 31)] }
        return String(decoding: lowered + [UInt8(ascii: "1")] + characters, as: UTF8.self)
    }

    /// Encodes `bytes` (regrouped into 5 bits, zero-padded) under `human`, in lower case.
    package static func encode(human: String, bytes: [UInt8]) -> String {
        encode(human: human, groups: regroup(bytes, from: 8, to: 5, pad: true) ?? [])
    }

    /// The human-readable part (lower case) and the 5-bit groups of `text`, checksum checked and removed.
    package static func decodeGroups(_ text: String, limit: Int? = 90) throws(Failure) -> (
        human: String, groups: [UInt8]
    ) {
        let bytes = Array(text.utf8)
        if let limit, bytes.count > limit { throw .tooLong(limit) }
        let hasLower = bytes.contains { (0x61...0x7A).contains($0) }
        let hasUpper = bytes.contains { (0x41...0x5A).contains($0) }
        if hasLower && hasUpper { throw .mixedCase }
        guard let separator = bytes.lastIndex(of: UInt8(ascii: "1")), separator > 0 else { throw .noSeparator }
        let lowered = bytes.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
        let human = Array(lowered[..<separator])
        guard human.allSatisfy({ (33...126).contains($0) }) else { throw .humanPartCharacter }
        let data = lowered[(separator + 1)...]
        guard data.count >= 6 else { throw .tooShort }
        var groups: [UInt8] = []
        groups.reserveCapacity(data.count)
        for character in data {
            guard character < 128, values[Int(character)] >= 0 else {
                throw .dataCharacter(Character(Unicode.Scalar(character)))
            }
            groups.append(UInt8(values[Int(character)]))
        }
        guard polymod(expand(human) + groups) == 1 else { throw .checksum }
        return (String(decoding: human, as: UTF8.self), Array(groups.dropLast(6)))
    }

    /// The human-readable part (lower case) and the bytes of `text`.
    package static func decode(_ text: String, limit: Int? = 90) throws(Failure) -> (human: String, bytes: [UInt8]) {
        let (human, groups) = try decodeGroups(text, limit: limit)
        guard let bytes = regroup(groups, from: 5, to: 8, pad: false) else { throw .padding }
        return (human, bytes)
    }

    /// `values` of `from` bits as values of `to` bits (BIP 173's convertbits); nil when the padding is wrong.
    static func regroup(_ values: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var accumulator = 0
        var bits = 0
        var out: [UInt8] = []
        let mask = (1 << to) - 1
        for value in values {
            guard Int(value) >> from == 0 else { return nil }
            accumulator = (accumulator << from) | Int(value)
            bits += from
            while bits >= to {
                bits -= to
                out.append(UInt8((accumulator >> bits) & mask))
            }
            accumulator &= (1 << bits) - 1
        }
        if pad {
            if bits > 0 { out.append(UInt8((accumulator << (to - bits)) & mask)) }
        } else if bits >= from || (accumulator << (to - bits)) & mask != 0 {
            return nil
        }
        return out
    }
}
