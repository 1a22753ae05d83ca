internal import CSodium
import FoundationEssentials

/// The record file's two-copy layout: one preallocated file of two equal halves, each able to hold one copy of
/// the record's JSON with a sequence number and a checksum over all of its bytes.
///
/// A save writes the new copy, with the next sequence number, over the half that does not hold the current
/// copy, syncs it once (`fdatasync`: the file's size and blocks do not change, so no metadata has to reach the
/// disk), and then blanks the other half. A crash or power loss at any byte of that write leaves the current copy
/// untouched in its half and the torn one failing its checksum, so a reader, which takes the intact copy with the
/// highest sequence number, finds the old state or the new one and never a mix of the two. Blanking the half
/// that held the old copy, after the new one is durable, leaves one copy at rest: a retired token seal and an
/// older counter do not stay in the file for an edit of the current copy to fall back to.
///
/// The checksum is a BLAKE2b-256 (`crypto_generichash`, keyed with a fixed, public domain label) of the half's
/// header and JSON. It detects tears, bit rot and careless edits; it is not a MAC: whoever can write the file can
/// write a copy that checks (see docs/security.md, "The record file").
///
/// Half layout (little-endian): `"TPRC"`, layout version (1), three zero bytes, sequence (UInt64), half size
/// (UInt32, the file's size over 2), JSON length (UInt32), the JSON, then the 32-byte checksum of everything
/// before it; the rest of the half is zero.
///
/// `package`: the tests' record helper (TokenpinTestSupport, a regular target built in release too) writes and
/// recognises record files through it, without `@testable`.
package enum RecordCopies {
    static let magic: [UInt8] = Array("TPRC".utf8)
    static let layoutVersion: UInt8 = 1
    static let headerSize = 24
    static let checksumSize = 32
    /// Halves are whole pages, at least one.
    static let pageSize = 4096

    /// One intact copy: its half (0 or 1), its sequence number and its JSON.
    struct Copy: Equatable, Sendable {
        var half: Int
        var sequence: UInt64
        var json: Data
    }

    /// Why a half holds no intact copy.
    enum Damage: String, Error, Equatable, Sendable {
        /// All zero: blanked after a save, or never written.
        case blank = "blank"
        /// Not a tokenpin record copy (no magic): overwritten with something else.
        case foreign = "not a record copy"
        /// The header does not fit the file (length or half size wrong).
        case malformed = "a malformed header"
        /// The checksum does not match: torn by a crash mid-write, or edited.
        case checksum = "a checksum that does not match (torn or edited)"
    }

    /// What the two halves of a file hold.
    struct Reading: Sendable {
        var copies: [Copy]
        var damage: [Damage?]
        /// The intact copy with the highest sequence number.
        var current: Copy? { copies.max { $0.sequence < $1.sequence } }
    }

    /// Whether `bytes` look like the legacy single-JSON record (its first byte `{` or JSON whitespace).
    package static func isLegacyJSON(_ bytes: Data) -> Bool {
        guard let first = bytes.first else { return false }
        return first == UInt8(ascii: "{") || first == 0x20 || first == 0x09 || first == 0x0A || first == 0x0D
    }

    /// The half size a file holding `json` gets when it is (re)created: room for the copy twice over, in pages.
    static func halfSize(for json: Data) -> Int {
        let needed = 2 * (headerSize + json.count + checksumSize)
        return max(pageSize, (needed + pageSize - 1) / pageSize * pageSize)
    }

    /// Whether a copy of `json` fits a half of `halfSize` bytes.
    static func fits(_ json: Data, halfSize: Int) -> Bool { headerSize + json.count + checksumSize <= halfSize }

    /// The bytes of one copy (header, JSON, checksum), without the half's zero padding.
    static func encode(json: Data, sequence: UInt64, halfSize: Int) -> [UInt8] {
        var bytes = magic
        bytes.reserveCapacity(headerSize + json.count + checksumSize)
        bytes += [layoutVersion, 0, 0, 0]
        append(&bytes, sequence, count: 8)
        append(&bytes, UInt64(halfSize), count: 4)
        append(&bytes, UInt64(json.count), count: 4)
        bytes += json
        bytes += checksum(bytes)
        return bytes
    }

    /// A whole new file: the copy in the first half, the second half blank.
    package static func newFile(json: Data, sequence: UInt64) -> [UInt8] {
        let half = halfSize(for: json)
        var bytes = encode(json: json, sequence: sequence, halfSize: half)
        bytes += [UInt8](repeating: 0, count: 2 * half - bytes.count)
        return bytes
    }

    /// Reads both halves of a two-copy file.
    static func read(_ file: Data) -> Reading {
        guard file.count % 2 == 0, file.count >= 2 * (headerSize + checksumSize) else {
            return Reading(copies: [], damage: [.malformed, .malformed])
        }
        let half = file.count / 2
        var reading = Reading(copies: [], damage: [])
        for index in 0..<2 {
            let start = file.startIndex + index * half
            switch parse(file[start..<(start + half)], half: index, halfSize: half) {
            case .success(let copy):
                reading.copies.append(copy)
                reading.damage.append(nil)
            case .failure(let damage):
                reading.damage.append(damage)
            }
        }
        return reading
    }

    private static func parse(_ bytes: Data, half: Int, halfSize: Int) -> Result<Copy, Damage> {
        let base = bytes.startIndex
        guard bytes.prefix(4).elementsEqual(magic) else {
            // Over the bytes where they lie: a blanked half is 4 KiB or more, and `Data`'s own iterator takes
            // about 50 instructions a byte.
            return .failure(bytes.withUnsafeBytes { $0.allSatisfy { $0 == 0 } } ? .blank : .foreign)
        }
        guard bytes[base + 4] == layoutVersion, bytes[(base + 5)..<(base + 8)].allSatisfy({ $0 == 0 }) else {
            return .failure(.malformed)
        }
        let sequence = integer(bytes, at: base + 8, count: 8)
        let declaredHalf = integer(bytes, at: base + 16, count: 4)
        let length = Int(integer(bytes, at: base + 20, count: 4))
        guard declaredHalf == UInt64(halfSize), headerSize + length + checksumSize <= halfSize else {
            return .failure(.malformed)
        }
        let end = base + headerSize + length
        guard bytes[end..<(end + checksumSize)].elementsEqual(checksum(bytes[base..<end])) else {
            return .failure(.checksum)
        }
        return .success(Copy(half: half, sequence: sequence, json: Data(bytes[(base + headerSize)..<end])))
    }

    /// BLAKE2b-256 of `bytes`, keyed with a fixed domain label so no other BLAKE2b use can produce it.
    static func checksum(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { checksum($0) } }

    /// The same, of a slice of the file as read: hashed where it lies (copying a `Data` slice into an array goes
    /// byte by byte through its iterator, about 0.3 ms for a 4 KiB half).
    static func checksum(_ bytes: Data) -> [UInt8] { bytes.withUnsafeBytes { checksum($0) } }

    private static func checksum(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        Sodium.ensureReady()
        let key = Array("tokenpin record copy v1".utf8)
        var out = [UInt8](repeating: 0, count: checksumSize)
        _ = crypto_generichash(
            &out, out.count, message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count), key,
            key.count)
        return out
    }

    private static func append(_ bytes: inout [UInt8], _ value: UInt64, count: Int) {
        for shift in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(shift)))) }
    }

    private static func integer(_ bytes: Data, at offset: Int, count: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<count { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        return value
    }
}
