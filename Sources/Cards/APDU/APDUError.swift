/// A malformed APDU or TLV: hostile input from a card, a file or a host.
///
/// Tests compare `code`; `detail` is for people.
public struct APDUError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of malformation this is.
    public enum Code: String, Sendable, Hashable {
        /// Fewer bytes than the structure needs.
        case truncated
        /// Bytes left over after a complete structure.
        case trailingBytes
        /// A length field that is invalid, indefinite or too large.
        case invalidLength
        /// A tag that is invalid or too long.
        case invalidTag
        /// Constructed values nested deeper than the parser allows.
        case tooDeep
        /// A response without the two status bytes, or a command without a header.
        case invalidStructure
        /// A card returned more data than the protocol allows.
        case responseTooLong
        /// A status word the command cannot be answered with (a wrong-PIN `63 Cx` to a command that sent no PIN).
        case unexpectedStatus
    }

    /// The kind of malformation.
    public var code: Code
    /// A human description.
    public var detail: String

    /// Creates an error.
    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code.rawValue): \(detail)" }
}
