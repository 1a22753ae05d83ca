package import TokenpinAPDU

/// Why an OpenPGP card command did not succeed.
///
/// Status words map to the cases below (OpenPGP card 3.4.1 and ISO/IEC 7816-4 status bytes); a transport
/// failure (card pulled, pcscd gone) is `.transport` with the connection's `CardTransportError` inside.
package enum OpenPGPError: CardApplicationError, Sendable, Equatable, CustomStringConvertible {
    /// `63 Cx` (or `69 82` after VERIFY): the PIN was wrong; `retriesLeft` tries remain (0: now blocked).
    case wrongPIN(retriesLeft: Int)
    /// `69 83`: the password is blocked (retry counter at zero).
    case blocked
    /// `69 82`: the command needs a verified PIN (VERIFY first).
    case securityStatusNotSatisfied
    /// `6A 88`: the referenced data or key does not exist (no key in that slot, no such DO).
    case referencedDataNotFound
    /// `6A 82` on SELECT: the card has no OpenPGP application.
    case applicationNotFound
    /// `69 85`: conditions of use not satisfied; for PSO:DECIPHER the key is of another algorithm (or a
    /// touch confirmation was required and missing).
    case wrongAlgorithm
    /// `6A 80`: the card rejected the command data (a PIN of a length it does not take, a bad cryptogram).
    case incorrectData
    /// `6D 00`, `6E 00`, `6A 81`, `68 8x`: the card does not support the command.
    case unsupported(StatusWord)
    /// The answer does not parse: truncated TLV, wrong-length values, garbage.
    case malformed(APDUError)
    /// Any other status word.
    case unexpected(StatusWord)
    /// The caller's argument cannot be sent (empty PIN, wrong-length key); nothing reached the card.
    case invalidArgument(String)
    /// The connection failed: the card was removed, the reader or pcscd went away.
    case transport(CardTransportError)

    /// What a status means to the OpenPGP application: `6A 82` is no OpenPGP application, `69 85` a key of another
    /// algorithm (§7.2.11), and `6D 00`, `6E 00`, `6A 81`, `68 8x` an unsupported command.
    package static func meaning(of status: CardStatus) -> OpenPGPError? {
        switch status {
        case .notFound: .applicationNotFound
        case .conditionsNotSatisfied: .wrongAlgorithm
        case .unsupported(let sw): .unsupported(sw)
        default: nil
        }
    }

    package var description: String {
        switch self {
        case .wrongPIN(let retries):
            retries == 0 ? "wrong PIN; the card PIN is now blocked" : "wrong PIN, \(retries) tries left"
        case .blocked: "the card PIN is blocked; unblock it with the Reset Code or the admin PIN"
        case .securityStatusNotSatisfied: "the card needs the PIN verified first"
        case .referencedDataNotFound: "the card has no such key or data object"
        case .applicationNotFound: "the card has no OpenPGP application"
        case .wrongAlgorithm: "the card refused the operation for this key (wrong algorithm or touch missing)"
        case .incorrectData: "the card rejected the command data"
        case .unsupported(let sw): "the card does not support this command (\(sw))"
        case .malformed(let error): "the card's answer is malformed: \(error)"
        case .unexpected(let sw): "the card answered \(sw): \(sw.meaning)"
        case .invalidArgument(let detail): detail
        case .transport(let error): "the card connection failed: \(error)"
        }
    }
}
