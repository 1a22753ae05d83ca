import FoundationEssentials
package import TokenpinAPDU
internal import TokenpinCore

// Why a token could not be used, in words: the one place card errors become a fallback or a service error.

/// Why the token could not be used; becomes a fallback to the PIN or an error.
struct TokenFailure: Error {
    enum Kind {
        /// No reader, no card, not the enrolled card, a card that answers nonsense.
        case unavailable
        /// The card refused: a wrong card PIN, a blocked card, a key that does not open the slot.
        case refused
        /// The smart-card service is not running.
        case service
    }

    var kind: Kind
    var reason: String
    /// The card PIN's tries left as the card reported them, when it was asked (nil: the card was not reached).
    var cardTriesLeft: Int? = nil
    /// Another program holds the card exclusively: tokenpin could not look at it, and says who holds it.
    var heldElsewhere = false
    /// The slot's challenge, when it may have reached the card before the failure: the card's answer may have
    /// crossed the line (and been kept by whoever owns it), so the challenge is retired at the next opening of
    /// the vault, by the PIN fallback.
    var sentChallenge: Data? = nil

    var serviceError: ServiceError {
        switch kind {
        case .unavailable, .refused: .tokenUnavailable(reason)
        case .service: .serviceUnavailable(reason)
        }
    }
}

extension PINService {
    /// Turns a card error into a token failure with a plain reason.
    func failure(_ error: TokenCardError, card: String) -> TokenFailure {
        switch error {
        case .wrongPIN(let retries) where retries == cardTriesUntold:
            return TokenFailure(kind: .refused, reason: "wrong card PIN for card \(card)", cardTriesLeft: nil)
        case .wrongPIN(let retries):
            return TokenFailure(
                kind: .refused,
                reason: retries == 0
                    ? "wrong card PIN for card \(card); the card PIN is now blocked (`tokenpin token unblock`)"
                    : "wrong card PIN for card \(card), \(retries) \(retries == 1 ? "try" : "tries") left on the card",
                cardTriesLeft: retries)
        case .blocked:
            return TokenFailure(
                kind: .refused, reason: "the PIN of card \(card) is blocked; unblock it with `tokenpin token unblock`",
                cardTriesLeft: 0)
        case .transport(let inner) where inner.deadline != nil:
            // Nothing was counted; the reader is named, since the card in it did not get a word in.
            return TokenFailure(kind: .unavailable, reason: "card \(card): \(inner)")
        case .transport(let inner):
            let described = ServiceError(inner)
            if case .serviceUnavailable(let why) = described { return TokenFailure(kind: .service, reason: why) }
            return TokenFailure(kind: .unavailable, reason: "card \(card): \(described.message)")
        case .malformed(let detail):
            return TokenFailure(kind: .unavailable, reason: "card \(card) answered malformed data (\(detail))")
        case .applicationNotFound:
            return TokenFailure(kind: .unavailable, reason: "card \(card) has no token application")
        case .unusable(let why), .refused(let why):
            return TokenFailure(kind: .unavailable, reason: "card \(card): \(why)")
        case .keypadRefused(let refusal):
            return TokenFailure(kind: .refused, reason: "card \(card): \(refusal); nothing was counted")
        }
    }
}

extension ServiceError {
    /// A card transport's failure as the service reports it, the one place it is mapped: pcscd not running (or not
    /// answering) is "a service is not running" (exit 69); everything else makes the token unavailable (exit 6).
    /// The message is the transport's hint, then its own words in parentheses (`Card was removed. (0x80100069)`).
    package init(_ error: CardTransportError) {
        switch error.kind {
        case .serviceUnavailable: self = .serviceUnavailable(error.explanation)
        default: self = .tokenUnavailable(error.explanation)
        }
    }
}
