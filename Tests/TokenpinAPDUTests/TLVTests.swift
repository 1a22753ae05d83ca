import Testing

@testable import TokenpinAPDU

/// BER-TLV (ISO/IEC 7816-4 §5.2): vectors, every prefix, and hostile encodings.
@Suite("TLV")
struct TLVTests {
    @Test(
        "encodes and parses tags and lengths",
        arguments: [
            (UInt32(0x4F), 3, "4F03"),
            (UInt32(0x5F52), 8, "5F5208"),
            (UInt32(0x7F49), 0x7F, "7F497F"),
            (UInt32(0x86), 0x80, "868180"),
            (UInt32(0xC5), 0xFF, "C581FF"),
            (UInt32(0x7F21), 0x100, "7F21820100"),
            (UInt32(0x5F48), 0x1234, "5F48821234"),
        ])
    func vectors(tag: UInt32, length: Int, header: String) throws {
        let object = TLV(tag: tag, value: [UInt8](repeating: 0xAB, count: length))
        let encoded = object.encoded
        #expect(Hex.encode(encoded.prefix(encoded.count - length)) == header)
        #expect(try TLV.parseOne(encoded) == object)
    }

    static let sample: [UInt8] = TLV(tag: 0x7F49, children: [TLV(tag: 0x86, value: [UInt8](repeating: 7, count: 32))])
        .encoded

    @Test("every proper prefix of an object fails cleanly with truncated")
    func truncation() {
        for length in 0..<Self.sample.count {
            let error = #expect(throws: APDUError.self) { try TLV.parseOne(Array(Self.sample.prefix(length))) }
            #expect(error?.code == .truncated, "prefix \(length)")
        }
    }

    @Test("trailing bytes after one object are rejected")
    func trailing() {
        let error = #expect(throws: APDUError.self) { try TLV.parseOne(Self.sample + [0x00]) }
        #expect(error?.code == .trailingBytes)
    }

    @Test(
        "hostile encodings",
        arguments: [
            ("8680", APDUError.Code.invalidLength),  // indefinite length
            ("86840000000100", .invalidLength),  // four length bytes
            ("8683FFFFFF", .invalidLength),  // huge value
            ("86830100000102", .invalidLength),  // 65536 > maxLength
            ("8605010203", .truncated),  // length past the end
            ("86820100", .truncated),  // length past the end, long form
            ("868201", .truncated),  // length field cut short
            ("7FFFFF0100", .invalidTag),  // tag longer than three bytes
            ("7F", .truncated),  // tag cut short
        ])
    func hostile(hex: String, code: APDUError.Code) {
        let error = #expect(throws: APDUError.self) { try TLV.parseOne(Hex.decode(hex) ?? []) }
        #expect(error?.code == code)
    }

    @Test("find looks into constructed objects, skips padding and treats unparsable ones as primitive")
    func find() throws {
        let related = TLV(
            tag: 0x6E,
            children: [
                TLV(tag: 0x4F, value: [1, 2]),
                TLV(tag: 0x73, children: [TLV(tag: 0xC4, value: [3])]),
            ])
        #expect(try TLV.find(0xC4, in: related.encoded)?.value == [3])
        #expect(try TLV.find(0xC4, in: [0x00, 0xFF] + related.encoded)?.value == [3])
        #expect(try TLV.find(0x99, in: related.encoded) == nil)
        // 0x73 constructed but its value is garbage: not an error, just not searched.
        let broken = TLV(tag: 0x73, value: [0xC4, 0x05]).encoded
        #expect(try TLV.find(0xC4, in: broken) == nil)
    }

    @Test("nesting deeper than maxDepth is tooDeep, not a stack overflow")
    func deepNesting() {
        var object = TLV(tag: 0x80, value: [1])
        for _ in 0..<40 { object = TLV(tag: 0x70, children: [object]) }
        let error = #expect(throws: APDUError.self) { try TLV.find(0x99, in: object.encoded) }
        #expect(error?.code == .tooDeep)
    }

    @Test("a huge but valid value parses")
    func hugeValue() throws {
        let object = TLV(tag: 0x7F21, value: [UInt8](repeating: 0x5A, count: TLV.maxLength))
        #expect(try TLV.parseOne(object.encoded).value.count == TLV.maxLength)
    }
}
