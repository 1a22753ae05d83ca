/// A command APDU: header, optional data, optional expected length.
///
/// ISO/IEC 7816-4, §5.1. Encodes in short form when it fits, extended form otherwise (or when asked).
public struct CommandAPDU: Sendable, Equatable, CustomStringConvertible {
    /// The class byte; bit 5 (`0x10`) marks a command that is not the last of a chain.
    public var cla: UInt8
    /// The instruction byte.
    public var ins: UInt8
    /// Parameter 1.
    public var p1: UInt8
    /// Parameter 2.
    public var p2: UInt8
    /// The command data field (Nc bytes).
    public var data: [UInt8]
    /// The maximum number of response bytes expected (Ne), or nil when no response data is expected.
    /// 256 encodes as `00` in short form, 65536 as `00 00` in extended form.
    public var le: Int?
    /// Whether the data carries a secret (a PIN): traces print only the header.
    public var isSensitive: Bool

    /// The largest Nc of a short APDU.
    public static let shortMaxData = 255
    /// The largest Ne of a short APDU.
    public static let shortMaxLe = 256
    /// The largest Nc of an extended APDU.
    public static let extendedMaxData = 65535
    /// The largest Ne of an extended APDU.
    public static let extendedMaxLe = 65536
    /// The class bit that marks a command followed by more of its chain.
    public static let chainingBit: UInt8 = 0x10

    /// Creates a command.
    public init(
        cla: UInt8 = 0x00, ins: UInt8, p1: UInt8, p2: UInt8, data: [UInt8] = [], le: Int? = nil,
        isSensitive: Bool = false
    ) {
        self.cla = cla
        self.ins = ins
        self.p1 = p1
        self.p2 = p2
        self.data = data
        self.le = le
        self.isSensitive = isSensitive
    }

    /// Whether the short form can carry this command.
    public var fitsShortForm: Bool {
        data.count <= Self.shortMaxData && (le ?? 0) <= Self.shortMaxLe
    }

    /// Whether this command is not the last of a chain.
    public var isChained: Bool { cla & Self.chainingBit != 0 }

    /// The bytes on the wire: short form when it fits and `extended` is false, extended form otherwise.
    public func encoded(extended: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = [cla, ins, p1, p2]
        let useExtended = extended || !fitsShortForm
        if !useExtended {
            if !data.isEmpty {
                bytes.append(UInt8(data.count))
                bytes.append(contentsOf: data)
            }
            if let le { bytes.append(le >= 256 ? 0 : UInt8(le)) }
            return bytes
        }
        if !data.isEmpty {
            bytes.append(0)
            bytes.append(UInt8(data.count >> 8))
            bytes.append(UInt8(data.count & 0xFF))
            bytes.append(contentsOf: data)
        }
        if let le {
            if data.isEmpty { bytes.append(0) }
            let value = le >= 65536 ? 0 : le
            bytes.append(UInt8(value >> 8))
            bytes.append(UInt8(value & 0xFF))
        }
        return bytes
    }

    /// Parses a command APDU in any of the seven ISO cases.
    ///
    /// Throws `APDUError` for a missing header, inconsistent lengths and trailing bytes.
    public init(parsing bytes: [UInt8]) throws(APDUError) {
        guard bytes.count >= 4 else { throw APDUError(.invalidStructure, "command shorter than its 4-byte header") }
        self.init(cla: bytes[0], ins: bytes[1], p1: bytes[2], p2: bytes[3])
        let body = bytes[4...]
        let start = body.startIndex
        switch body.count {
        case 0:  // case 1
            return
        case 1:  // case 2S
            le = body[start] == 0 ? 256 : Int(body[start])
            return
        default:
            break
        }
        if body[start] != 0 {  // short form, case 3S or 4S
            let nc = Int(body[start])
            let afterData = start + 1 + nc
            if afterData == body.endIndex {
                data = Array(body[(start + 1)..<afterData])
            } else if afterData + 1 == body.endIndex {
                data = Array(body[(start + 1)..<afterData])
                le = body[afterData] == 0 ? 256 : Int(body[afterData])
            } else if afterData > body.endIndex {
                throw APDUError(.truncated, "Lc announces \(nc) bytes, \(body.count - 1) present")
            } else {
                throw APDUError(.trailingBytes, "\(body.endIndex - afterData - 1) bytes after Le")
            }
            return
        }
        // Extended form: first body byte is 00.
        if body.count == 3 {  // case 2E
            let value = Int(body[start + 1]) << 8 | Int(body[start + 2])
            le = value == 0 ? 65536 : value
            return
        }
        guard body.count >= 3 else { throw APDUError(.truncated, "extended length field cut short") }
        let nc = Int(body[start + 1]) << 8 | Int(body[start + 2])
        guard nc > 0 else { throw APDUError(.invalidLength, "extended Lc of zero") }
        let dataStart = start + 3
        let afterData = dataStart + nc
        if afterData == body.endIndex {
            data = Array(body[dataStart..<afterData])
        } else if afterData + 2 == body.endIndex {
            data = Array(body[dataStart..<afterData])
            let value = Int(body[afterData]) << 8 | Int(body[afterData + 1])
            le = value == 0 ? 65536 : value
        } else if afterData > body.endIndex {
            throw APDUError(.truncated, "Lc announces \(nc) bytes, \(body.count - 3) present")
        } else {
            throw APDUError(.invalidLength, "extended Le must be two bytes")
        }
    }

    /// Zeroes the data field in place; for commands that carried a PIN.
    public mutating func wipe() {
        data.withUnsafeMutableBytes { buffer in
            for index in buffer.indices { buffer[index] = 0 }
        }
        data.removeAll()
    }

    /// The header in hex, then the data in hex or `[sensitive]`, then Le.
    public var description: String {
        var text = Hex.encode([cla, ins, p1, p2], separator: " ")
        if !data.isEmpty { text += isSensitive ? " [sensitive]" : " " + Hex.encode(data, separator: " ") }
        if let le { text += " le=\(le)" }
        return text
    }
}
