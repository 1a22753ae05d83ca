// Fuzz target for tokenpin's JSON parser (Sources/Core/JSON): no input may trap in either grammar; whatever the
// strict (protocol) grammar parses must serialize to bytes that parse to the same value, and the record grammar,
// which accepts more, must read it as the same value.
// Built by Tests/Fuzz/fuzz.sh with `swiftc -sanitize=fuzzer,address`.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let record = try? JSONParser.parse(bytes, grammar: .record)
    guard let value = try? JSONParser.parse(bytes, grammar: .strict) else { return 0 }
    precondition(record == value, "the record grammar read a strict value differently")
    let serialized = value.serialized
    precondition(!serialized.contains(0x0A), "a serialized value contains a newline")
    precondition((try? JSONParser.parse(serialized, grammar: .strict)) == value, "round trip changed the value")
    return 0
}
