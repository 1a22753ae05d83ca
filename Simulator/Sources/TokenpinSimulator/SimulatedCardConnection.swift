import FoundationEssentials
import TokenpinAPDU
internal import TokenpinSystem

/// An in-process `CardConnection` to a `SimulatedCard`: what `tokenpin --reader sim` and the tests use.
///
/// Connecting powers the card on. `transmit` throws `CardTransportError` (`.cardRemoved`) when the card gives no
/// answer, as a PC/SC connection throws when the card is pulled. Injected delays are served through `sleep`,
/// which tests replace so they never wait.
package final class SimulatedCardConnection: CardConnection {
    /// The card behind this connection.
    package let card: SimulatedCard

    /// The card's ATR.
    package var atr: [UInt8] { card.atr }

    /// Set from what the card announces: extended length and chaining, with the `7F66` limits.
    package var lengthCapabilities: LengthCapabilities

    /// How an injected delay is served; the default blocks the calling thread.
    package var sleep: (Duration) -> Void

    /// Connects to `card` and powers it on (a cold reset).
    package init(card: SimulatedCard, sleep: @escaping (Duration) -> Void = SimulatedCardConnection.blockingSleep) {
        self.card = card
        self.lengthCapabilities = card.lengthCapabilities
        self.sleep = sleep
        card.powerOn()
    }

    /// Sends one encoded command APDU to the card and returns its raw response.
    ///
    /// - Throws: `.cardRemoved` when the card was pulled or powered off, `.timeout` when it stalls.
    package func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        switch card.respond(to: command) {
        case .response(let bytes, let delay):
            if delay > .zero { sleep(delay) }
            return bytes
        case .removed:
            throw CardTransportError(.cardRemoved, "the simulated card was removed from the reader")
        case .notPowered:
            throw CardTransportError(.cardRemoved, "the simulated card is not powered")
        case .stalled:
            // In process nothing waits: the answer that will never come is the deadline passing at once.
            throw CardTransportError(CardTimeoutError(reader: "simulated card", timeout: nil, call: "transmit"))
        }
    }

    /// Blocks the current thread for `duration`.
    package static func blockingSleep(_ duration: Duration) {
        // Interrupted by a signal: sleeps what is left.
        CurrentThread.sleep(for: duration)
    }
}
