/// One BER-TLV data object: a tag and its value.
///
/// ISO/IEC 7816-4, §5.2 (and the OpenPGP card spec 3.4.1, §4.4, which uses it throughout). Tags are kept as
/// the integer of their bytes (`0x7F49`), so tag constants read as in the spec. The parser is hardened
/// against hostile input: indefinite lengths, lengths past the end, over-long tags and lengths, and nesting
/// deeper than `maxDepth` are errors, never crashes.
public struct TLV: Sendable, Equatable {
    /// The tag, its bytes read as a big-endian integer.
    public var tag: UInt32
    /// The value bytes.
    public var value: [UInt8]

    /// Creates a primitive or constructed object from its value bytes.
    public init(tag: UInt32, value: [UInt8]) {
        self.tag = tag
        self.value = value
    }

    /// Creates a constructed object from its children.
    public init(tag: UInt32, children: [TLV]) {
        self.init(tag: tag, value: children.flatMap(\.encoded))
    }

    /// How deep `children()`-based searches go before giving up.
    public static let maxDepth = 8
    /// The largest value length the parser accepts.
    public static let maxLength = 65535

    /// The tag's bytes.
    public var tagBytes: [UInt8] {
        if tag > 0xFFFFFF {
            return [UInt8(tag >> 24), UInt8((tag >> 16) & 0xFF), UInt8((tag >> 8) & 0xFF), UInt8(tag & 0xFF)]
        }
        if tag > 0xFFFF { return [UInt8(tag >> 16), UInt8((tag >> 8) & 0xFF), UInt8(tag & 0xFF)] }
        if tag > 0xFF { return [UInt8(tag >> 8), UInt8(tag & 0xFF)] }
        return [UInt8(tag)]
    }

    /// Whether the tag marks a constructed object (bit 6 of the first tag byte).
    public var isConstructed: Bool { tagBytes[0] & 0x20 != 0 }

    /// The definite-length encoding of a length.
    public static func encodeLength(_ length: Int) -> [UInt8] {
        switch length {
        case ..<0x80: return [UInt8(length)]
        case ..<0x100: return [0x81, UInt8(length)]
        default: return [0x82, UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
        }
    }

    /// Tag, length and value on the wire.
    public var encoded: [UInt8] { tagBytes + Self.encodeLength(value.count) + value }

    /// Parses the children of a constructed object.
    public func children() throws(APDUError) -> [TLV] {
        try TLV.parseAll(value)
    }

    /// Parses a sequence of objects that fills `bytes` exactly.
    public static func parseAll(_ bytes: [UInt8]) throws(APDUError) -> [TLV] {
        var objects: [TLV] = []
        var offset = 0
        while offset < bytes.count {
            // Padding bytes 00 and FF may sit between objects (ISO/IEC 7816-4, §5.2.1).
            if bytes[offset] == 0x00 || bytes[offset] == 0xFF {
                offset += 1
                continue
            }
            let (object, next) = try parse(bytes, at: offset)
            objects.append(object)
            offset = next
        }
        return objects
    }

    /// Parses exactly one object that fills `bytes`; trailing bytes are an error.
    public static func parseOne(_ bytes: [UInt8]) throws(APDUError) -> TLV {
        let (object, next) = try parse(bytes, at: 0)
        guard next == bytes.count else {
            throw APDUError(.trailingBytes, "\(bytes.count - next) bytes after tag \(Hex.encode(object.tagBytes))")
        }
        return object
    }

    /// Parses one object starting at `offset`; returns it and the offset after it.
    public static func parse(_ bytes: [UInt8], at offset: Int) throws(APDUError) -> (TLV, Int) {
        var index = offset
        guard index < bytes.count else { throw APDUError(.truncated, "expected a tag at offset \(offset)") }
        var tag = UInt32(bytes[index])
        index += 1
        if tag & 0x1F == 0x1F {
            var tagBytes = 1
            while true {
                guard index < bytes.count else { throw APDUError(.truncated, "tag cut short at offset \(index)") }
                let byte = bytes[index]
                index += 1
                tagBytes += 1
                guard tagBytes <= 3 else { throw APDUError(.invalidTag, "tag longer than 3 bytes at offset \(offset)") }
                tag = tag << 8 | UInt32(byte)
                if byte & 0x80 == 0 { break }
            }
        }
        guard index < bytes.count else { throw APDUError(.truncated, "length missing for tag at offset \(offset)") }
        let first = bytes[index]
        index += 1
        var length: Int
        if first < 0x80 {
            length = Int(first)
        } else if first == 0x80 {
            throw APDUError(.invalidLength, "indefinite length at offset \(index - 1)")
        } else {
            let count = Int(first & 0x7F)
            guard count <= 3 else { throw APDUError(.invalidLength, "length of \(count) bytes at offset \(index - 1)") }
            guard index + count <= bytes.count else {
                throw APDUError(.truncated, "length field cut short at offset \(index)")
            }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
        }
        guard length <= maxLength else { throw APDUError(.invalidLength, "length \(length) exceeds \(maxLength)") }
        guard length <= bytes.count - index else {
            throw APDUError(.truncated, "value of \(length) bytes, \(bytes.count - index) present")
        }
        return (TLV(tag: tag, value: Array(bytes[index..<(index + length)])), index + length)
    }

    /// Finds the first object with `tag` in `bytes`, looking into constructed objects depth-first.
    ///
    /// Objects whose contents do not parse are treated as primitive. Nesting past `maxDepth` is an error.
    public static func find(_ tag: UInt32, in bytes: [UInt8]) throws(APDUError) -> TLV? {
        try find(tag, in: parseAll(bytes), depth: 0)
    }

    /// Finds the first object with `tag` among `objects` and their descendants.
    public static func find(_ tag: UInt32, in objects: [TLV], depth: Int = 0) throws(APDUError) -> TLV? {
        guard depth <= maxDepth else { throw APDUError(.tooDeep, "objects nested deeper than \(maxDepth)") }
        for object in objects {
            if object.tag == tag { return object }
            if object.isConstructed, let children = try? object.children(),
                let found = try find(tag, in: children, depth: depth + 1)
            {
                return found
            }
        }
        return nil
    }
}
