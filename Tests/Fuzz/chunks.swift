// Shared by the fuzz targets that read a sequence from one input (APDUs to the simulator, answers from a card):
// each part is prefixed by its length as two big-endian bytes; a length past the end takes what is left.

/// Splits a fuzz input into length-prefixed parts, at most `limit` of them.
func fuzzParts(_ data: UnsafePointer<UInt8>, _ size: Int, limit: Int = 64) -> [[UInt8]] {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var parts: [[UInt8]] = []
    var offset = 0
    while offset + 2 <= bytes.count, parts.count < limit {
        let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
        offset += 2
        let end = min(bytes.count, offset + length)
        parts.append(Array(bytes[offset..<end]))
        offset = end
    }
    return parts
}
