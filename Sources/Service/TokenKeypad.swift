package import TokenpinAPDU
internal import TokenpinCore
import TokenpinOpenPGP
import TokenpinPIV

// Card PINs typed on the reader's own keypad (PC/SC v2 part 10 secure PIN entry): the reader sends the VERIFY or
// CHANGE REFERENCE DATA itself, so the card PIN never crosses the host. The tokenpin PIN is a software secret and is
// still typed at the keyboard (docs/cli.md, "PIN pads").
//
// What the reader answers is judged like a typed PIN's answer: `64 00` (timeout) and `64 01` (cancel) mean the card
// saw nothing and end the operation as cancelled, `63 Cx` is a wrong PIN, everything else goes through the card
// application's status handling. A reader that invents `90 00` opens nothing: the slot opens only with the card's
// answer to the binding's challenge, which the card gives only with the PIN verified.

/// The reader's keypad as a card application sees it.
struct CardKeypad {
    /// The reader, which sends the PIN commands.
    var reader: any PinpadReader
    /// Its pinpad as detected.
    var pinpad: Pinpad
}

/// The reader behind `connection` when it has a keypad interface: the connection itself (PC/SC), or the card source an
/// in-process connection wraps.
func keypadReader(of connection: any CardConnection) -> (any PinpadReader)? {
    if let reader = connection as? any PinpadReader { return reader }
    return (connection as? InProcessConnection)?.inner as? any PinpadReader
}

extension OpenPGPToken {
    /// The reader's keypad when PW1 can be typed there, else nil; `obstacle` says why not when the reader has one.
    func keypad() -> (keypad: CardKeypad?, obstacle: String?) {
        guard let reader = keypadReader(of: connection), let pinpad = reader.pinpad else {
            return (nil, nil)
        }
        if let ignored = pinpad.ignoredBecause { return (nil, ignored) }
        // A card with the KDF-DO on takes PW1 hashed (OpenPGP card 3.4.1, §4.3.2), which a keypad cannot produce.
        do {
            if try run({ session throws(OpenPGPError) in try card.keyDerivation(session) }) != nil {
                return (nil, "the card hashes its PIN (KDF-DO on), which a keypad cannot do")
            }
        } catch {
            return (nil, "the card's KDF-DO could not be read")
        }
        return (CardKeypad(reader: reader, pinpad: pinpad), nil)
    }

    /// PW1 (`82`) typed on the keypad, then PSO:DECIPHER of the binding's challenge, in one transaction.
    func answerOnKeypad(_ keypad: CardKeypad, binding: TokenBinding, algorithm: TokenKeyAlgorithm)
        throws(TokenCardError) -> SecretBytes
    {
        let challenge = [UInt8](binding.ephemeralPublicKey)
        let maximum = data.passwordStatus.maxLengthPW1
        var refusal: PinpadRefusal?
        let secret = try run { session throws(OpenPGPError) -> SecretBytes? in
            refusal = try session.verify(.pw1, onKeypadOf: keypad.reader, minLength: 6, maxLength: maximum)
            guard refusal == nil else { return nil }
            return try Self.decipher(challenge, algorithm, session)
        }
        if let refusal { throw .keypadRefused(refusal) }
        guard let secret else { throw .malformed("no answer from the card") }
        return secret
    }

    /// PW1 changed on the keypad: current, new, new again (MODIFY_PIN_DIRECT).
    func changePINOnKeypad(_ keypad: CardKeypad) throws(TokenCardError) {
        let maximum = data.passwordStatus.maxLengthPW1
        let refusal = try run { session throws(OpenPGPError) in
            try session.changeReferenceData(.pw1, onKeypadOf: keypad.reader, minLength: 6, maxLength: maximum)
        }
        if let refusal { throw .keypadRefused(refusal) }
    }
}

extension PIVToken {
    /// The reader's keypad when the PIV PIN can be typed there, else nil (and why, when the reader has one).
    func keypad() -> (keypad: CardKeypad?, obstacle: String?) {
        guard let reader = keypadReader(of: card.session.connection), let pinpad = reader.pinpad else {
            return (nil, nil)
        }
        if let ignored = pinpad.ignoredBecause { return (nil, ignored) }
        return (CardKeypad(reader: reader, pinpad: pinpad), nil)
    }

    /// The PIN (`80`) typed on the keypad, then the bound key's answer, in one transaction.
    func answerOnKeypad(_ keypad: CardKeypad, binding: TokenBinding, algorithm: TokenKeyAlgorithm)
        throws(TokenCardError) -> SecretBytes
    {
        var refusal: PinpadRefusal?
        do {
            return try answer(binding: binding, algorithm: algorithm) { session throws(PIVError) in
                refusal = try session.verify(onKeypadOf: keypad.reader)
                // The key is not asked: the card saw no PIN. Left through an error the caller replaces.
                if refusal != nil { throw .invalidArgument("keypad") }
            }
        } catch {
            if let refusal { throw .keypadRefused(refusal) }
            throw error
        }
    }

    /// The PIN changed on the keypad: current, new, new again (MODIFY_PIN_DIRECT).
    func changePINOnKeypad(_ keypad: CardKeypad) throws(TokenCardError) {
        let card = self.card
        let refusal = try Self.map { () throws(PIVError) in
            try card.transaction { session throws(PIVError) in
                try session.changeReferenceData(onKeypadOf: keypad.reader)
            }
        }
        if let refusal { throw .keypadRefused(refusal) }
    }
}

extension TokenApplication {
    /// The reader's keypad for this card's PIN, or nil (and why, when the reader has one the PIN cannot use).
    func cardKeypad() -> (keypad: CardKeypad?, obstacle: String?) {
        switch self {
        case let token as OpenPGPToken: token.keypad()
        case let token as PIVToken: token.keypad()
        default: (nil, nil)
        }
    }

    func answerOnKeypad(_ keypad: CardKeypad, binding: TokenBinding, algorithm: TokenKeyAlgorithm)
        throws(TokenCardError) -> SecretBytes
    {
        switch self {
        case let token as OpenPGPToken: try token.answerOnKeypad(keypad, binding: binding, algorithm: algorithm)
        case let token as PIVToken: try token.answerOnKeypad(keypad, binding: binding, algorithm: algorithm)
        default: throw .unusable("this card application takes no PIN from a keypad")
        }
    }

    func changePINOnKeypad(_ keypad: CardKeypad) throws(TokenCardError) {
        switch self {
        case let token as OpenPGPToken: try token.changePINOnKeypad(keypad)
        case let token as PIVToken: try token.changePINOnKeypad(keypad)
        default: throw .unusable("this card application takes no PIN from a keypad")
        }
    }
}

extension PINService {
    /// The keypad the card PIN of `card` is typed on, when the configuration allows it (`pinpad = auto`) and the
    /// reader has one the card can use; nil otherwise. When the reader has a keypad the card cannot use, says why
    /// (`keypadNotUsed`), and the PIN is typed at the keyboard.
    func keypad(for card: any TokenApplication, _ interaction: some Interaction) -> CardKeypad? {
        guard configuration.pinpad == .auto else { return nil }
        let (keypad, obstacle) = card.cardKeypad()
        if let obstacle { interaction.report(.keypadNotUsed(reader: card.reader, reason: obstacle)) }
        return keypad
    }

    /// The error a keypad refusal ends the operation with: nothing reached the card, nothing was counted.
    static func keypadError(_ refusal: PinpadRefusal) -> ServiceError {
        switch refusal {
        case .timedOut, .cancelled: .cancelled
        case .entriesDiffer: .cardPINRefused("\(refusal); nothing was changed")
        case .wrongLength: .cardPINRefused("\(refusal) for the card; nothing was tried or counted")
        }
    }
}

extension PINService {
    /// `cardSecret` with the card PIN typed on the reader's keypad: tells the person where to type it (an event,
    /// never a prompt), then VERIFY and the key operation in one transaction.
    func keypadSecret(
        _ card: any TokenApplication, _ keypad: CardKeypad, binding: TokenBinding, algorithm: TokenKeyAlgorithm,
        _ interaction: some Interaction
    ) throws -> SecretBytes {
        interaction.report(.keypadEntry(reader: card.reader, card: card.promptName, triesLeft: card.pinTriesLeft))
        do {
            return try card.answerOnKeypad(keypad, binding: binding, algorithm: algorithm)
        } catch .keypadRefused(let refusal) {
            logger.info("card PIN entry on the keypad ended", [("card", card.label), ("why", "\(refusal)")])
            throw Self.keypadError(refusal)
        } catch {
            throw answerFailure(error, card: card, binding: binding)
        }
    }
}

extension PINService {
    /// `token change-pin` on the reader's keypad (MODIFY_PIN_DIRECT: current, new, new again), when it has one that
    /// can change PINs; false when the PIN is to be changed at the keyboard instead.
    func changeCardPINOnKeypad(_ card: any TokenApplication, _ interaction: some Interaction) throws(ServiceError)
        -> Bool
    {
        guard let keypad = keypad(for: card, interaction) else { return false }
        guard keypad.pinpad.canModify else {
            interaction.report(
                .keypadNotUsed(reader: card.reader, reason: "the reader cannot change a PIN on its keypad"))
            return false
        }
        interaction.report(.keypadEntry(reader: card.reader, card: card.promptName, triesLeft: card.pinTriesLeft))
        do {
            try card.changePINOnKeypad(keypad)
        } catch .keypadRefused(let refusal) {
            throw Self.keypadError(refusal)
        } catch {
            throw .cardRefused(failure(error, card: card.label).reason)
        }
        logger.info("card PIN changed", [("card", card.label), ("on", "keypad")])
        return true
    }
}

/// A reader's keypad as `tokenpin readers` shows it.
package struct ReaderPinpad: Sendable, Equatable {
    /// Card PINs can be verified on it (`FEATURE_VERIFY_PIN_DIRECT`).
    package var verify: Bool
    /// Card PINs can be changed on it (`FEATURE_MODIFY_PIN_DIRECT`).
    package var modify: Bool
    /// The fewest and most digits it takes.
    package var minDigits: Int
    /// The most digits it takes.
    package var maxDigits: Int
    /// Why tokenpin does not use it though announced (a reader on the quirk list), or nil.
    package var ignored: String?

    /// A keypad described field by field.
    package init(verify: Bool, modify: Bool, minDigits: Int, maxDigits: Int, ignored: String? = nil) {
        self.verify = verify
        self.modify = modify
        self.minDigits = minDigits
        self.maxDigits = maxDigits
        self.ignored = ignored
    }

    /// A detected pinpad.
    package init(_ pinpad: Pinpad) {
        self.init(
            verify: pinpad.features.verifyPINDirect != nil, modify: pinpad.features.modifyPINDirect != nil,
            minDigits: pinpad.minDigits, maxDigits: pinpad.maxDigits, ignored: pinpad.ignoredBecause)
    }

    /// `PIN pad (4-16 digits, verify and change)`, `PIN pad ignored: ...`.
    package var description: String {
        if let ignored { return "PIN pad ignored (\(ignored))" }
        let what = modify ? "verify and change" : "verify only"
        return "PIN pad (\(minDigits)-\(maxDigits) digits, \(what))"
    }
}

extension PINService {
    /// `infos` with each reader's keypad (a direct connection and one or two SCardControl calls per reader).
    /// PKCS#11 keys are listed by URI, not by a PC/SC reader, and a service for them alone has no card readers.
    func withPinpads(_ infos: [ReaderInfo]) throws(ServiceError) -> [ReaderInfo] {
        guard selection.application != .pkcs11 else { return infos }
        let readers = try readers()
        return infos.map { info in
            var info = info
            info.pinpad = readers.pinpad(of: info.name)
            return info
        }
    }
}

// MARK: The admin PIN and the PUK on the keypad

extension OpenPGPToken {
    /// PW3 as a keypad takes it: variable length, at least 8 characters (OpenPGP card 3.4.1, §4.3.1), at most what the
    /// card's PW status allows.
    var adminPINFormat: PINEntryFormat {
        .openPGP(minLength: 8, maxLength: min(data.passwordStatus.maxLengthPW3, OpenPGPSession.maxPINLength))
    }

    /// VERIFY PW3 (`83`) on the keypad, then RESET RETRY COUNTER (`00 2C 02 81`) with `newPIN`, in one transaction.
    ///
    /// The new PIN is typed at the keyboard, as gnupg's scdaemon does it: after PW3 the command takes only the new PIN,
    /// which no part 10 structure of a verified card asks the keypad for. A refused or cancelled admin PIN leaves the
    /// card as it was.
    func unblockOnKeypad(_ keypad: CardKeypad, newPIN: borrowing SecretBytes) throws(TokenCardError) {
        let format = adminPINFormat
        let refusal = try run { session throws(OpenPGPError) -> PinpadRefusal? in
            if let refusal = try session.verify(
                .pw3, onKeypadOf: keypad.reader, minLength: format.minLength, maxLength: format.maxLength)
            {
                return refusal
            }
            try session.resetRetryCounter(newPIN: newPIN, keyDerivation: card.keyDerivation(session))
            return nil
        }
        if let refusal { throw .keypadRefused(refusal) }
    }

    /// VERIFY PW3 on the keypad, then PUT DATA of the algorithm attributes and GENERATE, in one transaction: one entry
    /// on the keypad (the typed path checks the admin PIN before its question and sends it again after).
    func generateOnKeypad(_ keypad: CardKeypad) throws(TokenCardError) -> CardPublicKey {
        let format = adminPINFormat
        var refusal: PinpadRefusal?
        let publicKey = try run { session throws(OpenPGPError) -> CardPublicKey? in
            refusal = try session.verify(
                .pw3, onKeypadOf: keypad.reader, minLength: format.minLength, maxLength: format.maxLength)
            guard refusal == nil else { return nil }
            try session.setAlgorithmAttributes(.cv25519, for: .decryption)
            return try session.generateKey(for: .decryption)
        }
        if let refusal { throw .keypadRefused(refusal) }
        guard let publicKey else { throw .malformed("no public key from the card") }
        return publicKey
    }
}

extension PIVToken {
    /// RESET RETRY COUNTER with the PUK, the new PIN and the new PIN again typed on the keypad (`MODIFY_PIN_DIRECT`,
    /// one command): neither the PUK nor the new PIN crosses the host.
    func unblockOnKeypad(_ keypad: CardKeypad) throws(TokenCardError) {
        let card = self.card
        let refusal = try Self.map { () throws(PIVError) in
            try card.transaction { session throws(PIVError) in try session.unblockPIN(onKeypadOf: keypad.reader) }
        }
        if let refusal { throw .keypadRefused(refusal) }
    }
}

extension PINService {
    /// The keypad `credential` of `card` is typed on, or nil (then it is typed at the keyboard, and where the reader
    /// has a keypad the person is told why): the card PIN's conditions (`pinpad = auto`, no quirk, no KDF-DO), and
    /// the keypad must take the credential's length (PW3: 8 or more) and, for the PUK, a second PIN
    /// (`MODIFY_PIN_DIRECT`).
    func keypad(for card: any TokenApplication, credential: KeypadCredential, _ interaction: some Interaction)
        -> CardKeypad?
    {
        guard let keypad = keypad(for: card, interaction) else { return nil }
        let format: PINEntryFormat
        switch (credential, card) {
        case (.adminPIN, let token as OpenPGPToken):
            format = token.adminPINFormat
        case (.puk, is PIVToken):
            guard keypad.pinpad.canModify else {
                interaction.report(
                    .keypadNotUsed(
                        reader: card.reader,
                        reason: "the PUK goes to the card with the new PIN, and the reader cannot take two PINs"))
                return nil
            }
            format = .piv
        default:
            return nil
        }
        guard keypad.pinpad.canVerify else { return nil }
        do {
            try PinpadStructure.check(format, on: keypad.pinpad)
        } catch {
            interaction.report(.keypadNotUsed(reader: card.reader, reason: "the \(credential.displayName): \(error)"))
            return nil
        }
        return keypad
    }

    /// `token unblock` on the keypad where the credential can be typed there: the OpenPGP admin PIN (VERIFY PW3 on
    /// the keypad, the new card PIN at the keyboard), the PIV PUK (PUK, new PIN and new PIN again on the keypad, one
    /// RESET RETRY COUNTER). False when the credential is to be typed at the keyboard instead. The OpenPGP Reset
    /// Code always is: it goes to the card in one command with the new PIN, both of variable length, and a keypad
    /// cannot tell where the second would start.
    func unblockCardPINOnKeypad(
        _ card: any TokenApplication, with credential: UnblockCredential, triesLeft: Int?,
        _ interaction: some Interaction
    ) throws(ServiceError) -> Bool {
        let keypadCredential: KeypadCredential
        switch credential {
        case .adminPIN: keypadCredential = .adminPIN
        case .puk: keypadCredential = .puk
        case .resetCode:
            if keypad(for: card, interaction) != nil {
                interaction.report(
                    .keypadNotUsed(
                        reader: card.reader,
                        reason: "the Reset Code goes to the card with the new PIN in one command, which a keypad "
                            + "cannot build for PINs of any length"))
            }
            return false
        }
        guard let keypad = keypad(for: card, credential: keypadCredential, interaction) else { return false }
        let entry = Event.keypadCredentialEntry(
            reader: card.reader, card: card.promptName, credential: keypadCredential,
            triesLeft: triesLeft ?? cardTriesUntold)
        switch card {
        case let token as OpenPGPToken:
            let new = try readNewCardPIN(interaction, maximum: card.pinMaxLength)
            interaction.report(entry)
            do throws(TokenCardError) {
                try token.unblockOnKeypad(keypad, newPIN: new)
            } catch {
                throw keypadUnblockError(error, card: card, credential: credential)
            }
        case let token as PIVToken:
            interaction.report(entry)
            do throws(TokenCardError) {
                try token.unblockOnKeypad(keypad)
            } catch {
                throw keypadUnblockError(error, card: card, credential: credential)
            }
        default:
            return false
        }
        logger.info("card PIN unblocked", [("card", card.label), ("with", credential.name), ("on", "keypad")])
        return true
    }

    /// Why unblocking on the keypad failed: the keypad's refusal, a card pulled while the person typed, or the card's
    /// refusal of the credential.
    func keypadUnblockError(_ error: TokenCardError, card: any TokenApplication, credential: UnblockCredential)
        -> ServiceError
    {
        if case .keypadRefused(let refusal) = error {
            logger.info("unblocking on the keypad ended", [("card", card.label), ("why", "\(refusal)")])
            return Self.keypadError(refusal)
        }
        let reason = failure(error, card: card.label).reason
        // The card pulled while the person typed (entries take up to 30 s): no card, nothing counted.
        if case .transport = error { return .tokenUnavailable(reason) }
        return .cardRefused(reason.replacing("card PIN", with: credential.name))
    }
}
