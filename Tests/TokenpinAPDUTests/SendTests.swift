import Testing
import TokenpinTestSupport

@testable import TokenpinAPDU

@Suite("CardConnection.send")
struct SendTests {
    @Test("61xx: GET RESPONSE fetches the rest and the data is joined")
    func getResponse() throws {
        let connection = ScriptedConnection(["01026103", "0304059000"])
        let response = try connection.send(CommandAPDU(ins: 0xCA, p1: 0, p2: 0x6E, le: 256))
        #expect(response.data == [1, 2, 3, 4, 5])
        #expect(response.statusWord == .success)
        #expect(connection.sent.last == [0x00, 0xC0, 0x00, 0x00, 0x03])
    }

    @Test("6Cxx: the command is repeated once with the Le the card names")
    func wrongLe() throws {
        let connection = ScriptedConnection(["6C05", "01020304059000"])
        let response = try connection.send(CommandAPDU(ins: 0xCA, p1: 0, p2: 0x4F, le: 256))
        #expect(response.data.count == 5)
        #expect(connection.sent == [[0x00, 0xCA, 0x00, 0x4F, 0x00], [0x00, 0xCA, 0x00, 0x4F, 0x05]])
    }

    @Test("long data is chained in 255-byte parts with the chaining bit on all but the last")
    func chaining() throws {
        let connection = ScriptedConnection(
            ["9000", "9000", "9000"],
            capabilities: LengthCapabilities(extendedLength: false, commandChaining: true))
        let data = [UInt8](repeating: 0x41, count: 600)
        _ = try connection.send(CommandAPDU(ins: 0xDA, p1: 0x7F, p2: 0x21, data: data))
        #expect(connection.sent.map { $0[0] } == [0x10, 0x10, 0x00])
        #expect(connection.sent.map { Int($0[4]) } == [255, 255, 90])
        #expect(connection.sent.flatMap { $0.dropFirst(5) } == data)
    }

    @Test("a failing chain part stops the chain and returns its status word")
    func chainFailure() throws {
        let connection = ScriptedConnection(
            ["6982"], capabilities: LengthCapabilities(extendedLength: false, commandChaining: true))
        let response = try connection.send(
            CommandAPDU(ins: 0xDA, p1: 0x7F, p2: 0x21, data: [UInt8](repeating: 0, count: 300)))
        #expect(response.statusWord == .securityStatusNotSatisfied)
        #expect(connection.sent.count == 1)
    }

    @Test("too much data for a card without chaining or extended length is an error, nothing is sent")
    func noChaining() {
        let connection = ScriptedConnection([])
        let error = #expect(throws: APDUError.self) {
            try connection.send(CommandAPDU(ins: 0xDA, p1: 0x7F, p2: 0x21, data: [UInt8](repeating: 0, count: 300)))
        }
        #expect(error?.code == .invalidLength)
        #expect(connection.sent.isEmpty)
    }

    @Test("extended length: one APDU, Le above 256 kept; short-only cards get Le 256")
    func extended() throws {
        let connection = ScriptedConnection(
            ["9000"],
            capabilities: LengthCapabilities(
                extendedLength: true, commandChaining: false,
                maxCommandData: 2048))
        _ = try connection.send(
            CommandAPDU(ins: 0xDA, p1: 0x7F, p2: 0x21, data: [UInt8](repeating: 0, count: 1000), le: 1000))
        #expect(connection.sent.count == 1 && connection.sent[0].count == 4 + 3 + 1000 + 2)
        let short = ScriptedConnection(["9000"])
        _ = try short.send(CommandAPDU(ins: 0xCA, p1: 0x7F, p2: 0x21, le: 1000))
        #expect(short.sent == [[0x00, 0xCA, 0x7F, 0x21, 0x00]])
    }

    @Test("a card that never stops announcing more data is responseTooLong")
    func endlessMoreData() {
        let connection = ScriptedConnection([String](repeating: "6100", count: 400))
        let error = #expect(throws: APDUError.self) {
            try connection.send(CommandAPDU(ins: 0xCA, p1: 0, p2: 0x6E, le: 256))
        }
        #expect(error?.code == .responseTooLong)
    }

    @Test("a malformed answer is invalidStructure", arguments: ["", "90"])
    func malformedAnswer(hex: String) {
        let connection = ScriptedConnection([hex])
        let error = #expect(throws: APDUError.self) {
            try connection.send(CommandAPDU(ins: 0xCA, p1: 0, p2: 0x6E, le: 256))
        }
        #expect(error?.code == .invalidStructure)
    }
}
