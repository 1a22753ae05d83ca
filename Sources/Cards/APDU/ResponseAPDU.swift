/// A response APDU: data and the status word.
///
/// ISO/IEC 7816-4, §5.1.3.
public struct ResponseAPDU: Sendable, Equatable, CustomStringConvertible {
    /// The response data field.
    public var data: [UInt8]
    /// SW1 SW2.
    public var statusWord: StatusWord

    /// Creates a response.
    public init(data: [UInt8] = [], statusWord: StatusWord) {
        self.data = data
        self.statusWord = statusWord
    }

    /// Parses the bytes a card returned: data then two status bytes.
    public init(parsing bytes: [UInt8]) throws(APDUError) {
        guard bytes.count >= 2 else {
            throw APDUError(.invalidStructure, "response of \(bytes.count) bytes has no status word")
        }
        data = Array(bytes[..<(bytes.count - 2)])
        statusWord = StatusWord(sw1: bytes[bytes.count - 2], sw2: bytes[bytes.count - 1])
    }

    /// The bytes on the wire.
    public var encoded: [UInt8] { data + [statusWord.sw1, statusWord.sw2] }

    public var description: String {
        data.isEmpty ? statusWord.description : "\(data.count) bytes, \(statusWord)"
    }
}
