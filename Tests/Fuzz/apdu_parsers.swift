// Fuzz target for the APDU layer's parsers (Sources/Cards/APDU): BER-TLV, command and response APDUs, the
// historical bytes. Every byte string is card or host input, so none may trap; whatever parses must encode to
// bytes that parse to the same value.
// Built by Tests/Fuzz/fuzz.sh with `swiftc -sanitize=fuzzer,address`.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAPDUParsers(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let objects = try? TLV.parseAll(bytes) {
        for object in objects {
            precondition((try? TLV.parseOne(object.encoded)) == object, "TLV round trip changed the object")
            _ = try? object.children()
        }
        _ = try? TLV.find(0x86, in: objects)
    }
    if let command = try? CommandAPDU(parsing: bytes) {
        for extended in [false, true] where extended || command.fitsShortForm {
            let again = try? CommandAPDU(parsing: command.encoded(extended: extended))
            precondition(
                again?.data == command.data && again?.le == command.le && again?.ins == command.ins,
                "command APDU round trip changed the command")
        }
    }
    if let response = try? ResponseAPDU(parsing: bytes) {
        precondition(response.encoded == bytes, "response APDU round trip changed the bytes")
    }
    _ = HistoricalBytes.lengthCapabilities(bytes)
    return 0
}
