package import TokenpinCore

/// The protocol's reading of JSON: the core's one parser (`JSONParser`, moved there so that the store reads records
/// with it too) with its strict grammar, each failure a `ProtocolError`.
extension JSONParser {
    /// Parses `bytes` as one JSON value of the protocol's strict grammar.
    package static func parse(_ bytes: [UInt8]) throws(ProtocolError) -> JSONValue {
        do {
            return try parse(bytes, grammar: .strict)
        } catch {
            throw ProtocolError(.malformed, error.detail)
        }
    }
}

/// The core's JSON value, by the name the daemon and the CLI knew from this module.
package typealias JSONValue = TokenpinCore.JSONValue
/// The core's JSON object member, by the name the daemon and the CLI knew from this module.
package typealias JSONMember = TokenpinCore.JSONMember
/// The core's JSON parser, by the name the daemon and the CLI knew from this module.
package typealias JSONParser = TokenpinCore.JSONParser
