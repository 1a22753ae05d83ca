import TokenpinAPDU

/// A transport that replays scripted answers and records what was sent: the byte-level seam `send()` sits on.
public final class ScriptedConnection: CardConnection {
    public var atr: [UInt8] = [0x3B, 0x00]
    public var lengthCapabilities: LengthCapabilities
    /// The answers still to give, in order; when none is left the card answers `6F00`.
    public var answers: [[UInt8]]
    /// Every command transmitted, whole.
    public private(set) var sent: [[UInt8]] = []

    /// A connection answering with `answers` (hex) in turn.
    public init(_ answers: [String], capabilities: LengthCapabilities = .shortOnly) {
        self.answers = answers.map { Hex.decode($0) ?? [] }
        self.lengthCapabilities = capabilities
    }

    public func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        sent.append(command)
        return answers.isEmpty ? [0x6F, 0x00] : answers.removeFirst()
    }
}
