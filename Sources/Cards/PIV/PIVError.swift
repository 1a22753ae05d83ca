package import TokenpinAPDU

/// Why a PIV card command did not succeed.
///
/// Status words map to the cases below (SP 800-73-4, part 2, §5.6 and the YubiKey's use of them); a transport
/// failure (card pulled, pcscd gone) is `.transport` with the connection's `CardTransportError` inside.
package enum PIVError: CardApplicationError, Sendable, Equatable, CustomStringConvertible {
    /// `63 Cx`: the PIN or PUK was wrong; `retriesLeft` tries remain (0: now blocked).
    case wrongPIN(retriesLeft: Int)
    /// `69 83`: the PIN or PUK is blocked (its retry counter is at zero).
    case blocked
    /// `69 82`: the command needs the PIN verified (or the management key authenticated) first.
    case securityStatusNotSatisfied
    /// `6A 82` on SELECT: the card has no PIV application.
    case applicationNotFound
    /// `6A 82` on GET DATA: the data object (a certificate, the CHUID) is not on the card.
    case objectNotFound
    /// `6A 88`: the key reference does not exist, or the slot holds no key.
    case referencedDataNotFound
    /// `6A 80`: the card rejected the command data (wrong algorithm for the key, a point not on the curve,
    /// a PIN of a length it does not take).
    case incorrectData
    /// `6B 00` or `6A 86`: the slot or the parameters are not valid on this card.
    case invalidSlot
    /// `69 85`: conditions of use not satisfied (a YubiKey reset before PIN and PUK are blocked, touch).
    case conditionsNotSatisfied
    /// `6D 00`, `6E 00`, `68 8x`: the card does not support the command (no YubiKey extensions, for one).
    case unsupported(StatusWord)
    /// The RSA block the card decrypted is not PKCS#1 v1.5 padded: the cryptogram was for another key or
    /// was altered.
    case decryptionFailed
    /// The answer does not parse: truncated TLV, wrong-length values, a certificate that is not X.509.
    case malformed(APDUError)
    /// Any other status word.
    case unexpected(StatusWord)
    /// The caller's argument cannot be sent (a PIN longer than 8 bytes, a point of the wrong size); nothing
    /// reached the card.
    case invalidArgument(String)
    /// The connection failed: the card was removed, the reader or pcscd went away.
    case transport(CardTransportError)

    /// What a status means to the PIV application: `6A 82` is a data object the card does not hold, wrong
    /// parameters a slot it does not have (SP 800-73-4, part 2, §5.6); `6A 81` is no unsupported command to PIV.
    package static func meaning(of status: CardStatus) -> PIVError? {
        switch status {
        case .notFound: .objectNotFound
        case .wrongParameters: .invalidSlot
        case .conditionsNotSatisfied: .conditionsNotSatisfied
        case .unsupported(let sw): sw.rawValue == 0x6A81 ? nil : .unsupported(sw)
        default: nil
        }
    }

    package var description: String {
        switch self {
        case .wrongPIN(let retries):
            retries == 0 ? "wrong PIN; it is now blocked" : "wrong PIN, \(retries) tries left"
        case .blocked: "the PIV PIN is blocked; unblock it with the PUK"
        case .securityStatusNotSatisfied: "the card needs the PIV PIN verified (or the management key) first"
        case .applicationNotFound: "the card has no PIV application"
        case .objectNotFound: "the card does not hold that PIV data object"
        case .referencedDataNotFound: "the card has no key in that slot"
        case .incorrectData: "the card rejected the command data (wrong algorithm for the key, or bad input)"
        case .invalidSlot: "the card does not have that PIV slot"
        case .conditionsNotSatisfied: "the card's conditions of use are not satisfied"
        case .unsupported(let sw): "the card does not support this command (\(sw))"
        case .decryptionFailed: "the card's RSA key does not decrypt this cryptogram"
        case .malformed(let error): "the card's answer is malformed: \(error)"
        case .unexpected(let sw): "the card answered \(sw): \(sw.meaning)"
        case .invalidArgument(let detail): detail
        case .transport(let error): "the card connection failed: \(error)"
        }
    }
}
