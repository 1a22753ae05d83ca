// Fuzz target for the daemon protocol's JSON parser (Sources/Protocol/JSON.swift): no input may trap,
// and whatever parses must serialize to bytes that parse to the same value.
// Built by Tests/Fuzz/fuzz.sh with `swiftc -sanitize=fuzzer,address`.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? JSONParser.parse(bytes) else { return 0 }
    let serialized = value.serialized
    precondition(!serialized.contains(0x0A), "a serialized value contains a newline")
    precondition((try? JSONParser.parse(serialized)) == value, "round trip changed the value")
    return 0
}
