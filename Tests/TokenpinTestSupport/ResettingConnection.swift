package import TokenpinAPDU

/// A connection that resets the card when a transaction ends, as a PC/SC connection does after a verified PIN:
/// the reset drops the selected application and the verified PINs, and `resets` counts it.
///
/// `policy` says when: after a transaction in which a VERIFY succeeded (what `PCSCCardConnection` does), or after
/// every transaction (a harsher card, or another client resetting it). `reset` resets the card behind `inner`.
package final class ResettingConnection: CardConnection {
    /// When a transaction ends in a reset.
    package enum Policy: Sendable {
        /// After a transaction in which a VERIFY answered `9000`.
        case afterVerifiedPIN
        /// After every transaction.
        case afterEveryTransaction
    }

    package let inner: any CardConnection
    package let policy: Policy
    private let resetCard: () -> Void
    /// Every command transmitted, whole.
    package private(set) var transmitted: [[UInt8]] = []
    package private(set) var resets = 0
    /// How many outermost transactions ran.
    package private(set) var transactions = 0
    private var verifiedInTransaction = false

    /// Wraps `inner`; `reset` resets the card behind it.
    package init(_ inner: any CardConnection, policy: Policy = .afterVerifiedPIN, reset: @escaping () -> Void) {
        self.inner = inner
        self.policy = policy
        self.resetCard = reset
    }

    package var atr: [UInt8] { inner.atr }

    package var lengthCapabilities: LengthCapabilities {
        get { inner.lengthCapabilities }
        set { inner.lengthCapabilities = newValue }
    }

    /// The instruction byte of each command transmitted, in order.
    package var instructions: [UInt8] { transmitted.map { $0.count > 1 ? $0[1] : 0 } }

    package func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        transmitted.append(command)
        let answer = try inner.transmit(command)
        if command.count > 1, command[1] == 0x20, answer.suffix(2) == [0x90, 0x00] { verifiedInTransaction = true }
        return answer
    }

    package func exclusive<R: ~Copyable, E: Error>(
        transportError: (CardTransportError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R {
        transactions += 1
        defer {
            if policy == .afterEveryTransaction || verifiedInTransaction {
                resetCard()
                resets += 1
            }
            verifiedInTransaction = false
        }
        return try body()
    }
}
