import Testing

@testable import TokenpinAPDU

/// ISO/IEC 7816-4 §5.1: the seven cases, both ways, and hostile bytes.
@Suite("CommandAPDU")
struct CommandAPDUTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        var name: String
        var hex: String
        var data: [UInt8]
        var le: Int?
        var extended: Bool
        var testDescription: String { name }
    }

    static let vectors: [Vector] = [
        Vector(name: "case 1", hex: "00E60000", data: [], le: nil, extended: false),
        Vector(name: "case 2S", hex: "00CA006E00", data: [], le: 256, extended: false),
        Vector(name: "case 2S Le 5", hex: "00CA004F05", data: [], le: 5, extended: false),
        Vector(name: "case 3S", hex: "0020008206313233343536", data: Array("123456".utf8), le: nil, extended: false),
        Vector(
            name: "case 4S", hex: "00A4040006D2760001240100", data: [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01], le: 256,
            extended: false),
        Vector(name: "case 2E", hex: "00CA7F21000000", data: [], le: 65536, extended: true),
        Vector(name: "case 2E Le 300", hex: "00CA7F2100012C", data: [], le: 300, extended: true),
        Vector(name: "case 3E", hex: "00DA005B000003414243", data: [0x41, 0x42, 0x43], le: nil, extended: true),
        Vector(name: "case 4E", hex: "002A8086000003A601000000", data: [0xA6, 0x01, 0x00], le: 65536, extended: true),
    ]

    @Test("parses every ISO case and encodes it back to the same bytes", arguments: vectors)
    func roundTrip(vector: Vector) throws {
        let bytes = try #require(Hex.decode(vector.hex))
        let command = try CommandAPDU(parsing: bytes)
        #expect(command.data == vector.data)
        #expect(command.le == vector.le)
        #expect(command.encoded(extended: vector.extended) == bytes)
    }

    @Test("no proper prefix parses to the command; a cut inside the data is truncated", arguments: vectors)
    func truncation(vector: Vector) throws {
        let bytes = try #require(Hex.decode(vector.hex))
        let full = try CommandAPDU(parsing: bytes)
        let lcEnd = 4 + (vector.extended ? 3 : 1)
        for length in 0..<bytes.count {
            let prefix = Array(bytes.prefix(length))
            do {
                // A prefix can be another valid case (header + Lc reads as case 2), never this command.
                #expect(try CommandAPDU(parsing: prefix) != full, "prefix \(length)")
            } catch {
                if !vector.data.isEmpty && length > lcEnd && length < lcEnd + vector.data.count {
                    #expect(error.code == .truncated, "prefix \(length)")
                }
            }
        }
    }

    @Test("shorter than a header is invalidStructure", arguments: 0..<4)
    func header(length: Int) {
        let error = #expect(throws: APDUError.self) {
            try CommandAPDU(parsing: Array([0x00, 0xCA, 0x00, 0x6E].prefix(length)))
        }
        #expect(error?.code == .invalidStructure)
    }

    @Test(
        "trailing bytes and bad extended forms are rejected",
        arguments: [
            ("00DA005B0141424344", APDUError.Code.trailingBytes),
            ("00DA005B05414243", .truncated),
            ("00DA005B000005414243", .truncated),
            ("00DA005B00000341424300", .invalidLength),
            ("00DA005B0000004142", .invalidLength),
            ("00CA006E0000", .truncated),
        ])
    func malformed(hex: String, code: APDUError.Code) throws {
        let error = #expect(throws: APDUError.self) { try CommandAPDU(parsing: Hex.decode(hex) ?? []) }
        #expect(error?.code == code)
    }

    @Test("long data or Le forces the extended form")
    func extendedWhenNeeded() throws {
        let long = CommandAPDU(ins: 0xDA, p1: 0x7F, p2: 0x21, data: [UInt8](repeating: 1, count: 300))
        #expect(!long.fitsShortForm)
        let bytes = long.encoded()
        #expect(bytes.prefix(7) == [0x00, 0xDA, 0x7F, 0x21, 0x00, 0x01, 0x2C])
        #expect(try CommandAPDU(parsing: bytes) == long)
        #expect(
            CommandAPDU(ins: 0xCA, p1: 0, p2: 0x6E, le: 1000).encoded() == [0x00, 0xCA, 0x00, 0x6E, 0x00, 0x03, 0xE8])
    }

    @Test("sensitive commands print only their header; wipe zeroes and empties the data")
    func sensitive() {
        var verify = CommandAPDU(ins: 0x20, p1: 0, p2: 0x82, data: Array("123456".utf8), isSensitive: true)
        #expect(verify.description == "00 20 00 82 [sensitive]")
        #expect(!verify.description.contains("31"))
        verify.wipe()
        #expect(verify.data.isEmpty)
        #expect(CommandAPDU(ins: 0xCA, p1: 0, p2: 0x6E, le: 256).description == "00 CA 00 6E le=256")
    }
}

@Suite("ResponseAPDU and StatusWord")
struct ResponseAPDUTests {
    @Test(
        "splits data and status word",
        arguments: [
            ("9000", [UInt8](), StatusWord.success),
            ("01029000", [0x01, 0x02], .success),
            ("6A88", [], .referencedDataNotFound),
            ("63C2", [], .wrongPIN(retriesLeft: 2)),
        ])
    func parse(hex: String, data: [UInt8], statusWord: StatusWord) throws {
        let response = try ResponseAPDU(parsing: Hex.decode(hex) ?? [])
        #expect(response.data == data)
        #expect(response.statusWord == statusWord)
        #expect(response.encoded == Hex.decode(hex))
    }

    @Test("fewer than two bytes is invalidStructure", arguments: [[], [0x90]] as [[UInt8]])
    func tooShort(bytes: [UInt8]) {
        let error = #expect(throws: APDUError.self) { try ResponseAPDU(parsing: bytes) }
        #expect(error?.code == .invalidStructure)
    }

    @Test(
        "status word helpers",
        arguments: [
            (StatusWord(rawValue: 0x63C3), 3 as Int?, nil as Int?, nil as Int?),
            (StatusWord(rawValue: 0x6110), nil, 16, nil),
            (StatusWord(rawValue: 0x6100), nil, 0, nil),
            (StatusWord(rawValue: 0x6C20), nil, nil, 32),
            (StatusWord(rawValue: 0x6C00), nil, nil, 256),
            (StatusWord(rawValue: 0x6300), nil, nil, nil),
        ])
    func helpers(statusWord: StatusWord, retries: Int?, remaining: Int?, correct: Int?) {
        #expect(statusWord.retriesLeft == retries)
        #expect(statusWord.bytesRemaining == remaining)
        #expect(statusWord.correctLength == correct)
    }

    @Test("constructors clamp", arguments: [(-1, 0x63C0), (2, 0x63C2), (99, 0x63CF)])
    func wrongPIN(retries: Int, raw: UInt16) {
        #expect(StatusWord.wrongPIN(retriesLeft: retries).rawValue == raw)
        #expect(StatusWord.moreData(300) == StatusWord(rawValue: 0x6100))
        #expect(StatusWord.moreData(5) == StatusWord(rawValue: 0x6105))
        #expect(StatusWord.authenticationMethodBlocked.description == "6983")
    }
}
