// Shared by the fuzz targets that play a hostile card (openpgp, piv): a connection whose answers are the parts of the
// fuzz input (chunks.swift), in order, after which the card is gone.
import TokenpinAPDU

/// A card that answers each command with the next part of the fuzz input, then is gone.
final class FuzzedCardConnection: CardConnection {
    /// What the card being gone throws.
    static let gone = CardTransportError(.cardRemoved, "the fuzzed card is gone")

    let atr: [UInt8] = [
        0x3B, 0xDA, 0x18, 0xFF, 0x81, 0xB1, 0xFE, 0x75, 0x1F, 0x03, 0x00, 0x31, 0xC5, 0x73, 0xC0,
        0x01, 0x40, 0x00, 0x90, 0x00, 0x0C,
    ]
    var lengthCapabilities = LengthCapabilities.shortOnly
    private var answers: [[UInt8]]
    private var next = 0
    private(set) var transmitted = 0

    init(answers: [[UInt8]]) { self.answers = answers }

    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        transmitted += 1
        precondition(transmitted < 10_000, "the session keeps sending commands to a card")
        guard next < answers.count else { throw Self.gone }
        defer { next += 1 }
        return answers[next]
    }
}
