package import TokenpinAPDU

/// A transport that replays scripted answers and records what was sent: the byte-level seam `send()` sits on.
package final class ScriptedConnection: CardConnection {
    package var atr: [UInt8] = [0x3B, 0x00]
    package var lengthCapabilities: LengthCapabilities
    /// The answers still to give, in order; when none is left the card answers `6F00`.
    package var answers: [[UInt8]]
    /// Every command transmitted, whole.
    package private(set) var sent: [[UInt8]] = []

    /// A connection answering with `answers` (hex) in turn.
    package init(_ answers: [String], capabilities: LengthCapabilities = .shortOnly) {
        self.answers = answers.map { Hex.decode($0) ?? [] }
        self.lengthCapabilities = capabilities
    }

    package func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        sent.append(command)
        return answers.isEmpty ? [0x6F, 0x00] : answers.removeFirst()
    }
}
