import FoundationEssentials
internal import TokenpinAPDU
internal import TokenpinCore

// The card's own PIN: `tokenpin token change-pin` and `tokenpin token unblock`, on the bound card or the one chosen.

extension PINService {
    /// The card the card-PIN commands act on: the bound card when there is one (found by the serial read from
    /// the card, before any prompt), else the one chosen. Under `.boundCardOnly` only the bound card, and no
    /// card at all without a binding.
    func managedCard(_ interaction: some Interaction, command: String) throws(ServiceError) -> any TokenApplication {
        let binding = try boundCard()
        if cardScope == .boundCardOnly {
            let local = "manage another card with `tokenpin --local token \(command)`, under your own smart-card rights"
            guard let binding else {
                throw .permissionDenied(
                    "through tokenpind you manage only the card bound to your record, "
                        + "and no card is bound; " + local)
            }
            if let named = selection.serial, !CardSelection(serial: named).accepts(serial: binding.serial) {
                throw .permissionDenied(
                    "through tokenpind you manage only the card bound to your record "
                        + "(\(cardLabel(serial: binding.serial))), not card \(named); " + local)
            }
        }
        if let binding {
            do throws(TokenFailure) { return try openEnrolledCard(binding) } catch { throw error.serviceError }
        }
        let chosen = try chooseCard(interaction)
        do throws(TokenFailure) {
            return try openCard(reader: chosen.reader, kind: chosen.kind)
        } catch {
            throw error.serviceError
        }
    }

    /// Reads a new card PIN twice and checks its length against the card's limits (6 up to PW1's maximum).
    func readNewCardPIN(_ interaction: some Interaction, maximum: Int) throws(ServiceError) -> SecretBytes {
        let new = try interaction.readSecret(.newCardPIN)
        // The length is checked before the confirmation is asked, and the refusal says what the card takes.
        let most = max(6, maximum)
        guard (6...most).contains(new.count) else {
            throw .cardPINRefused(
                "a card PIN has 6 to \(most) characters on this card, not \(new.count); nothing was changed")
        }
        let again = try interaction.readSecret(.confirmCardPIN)
        guard new.isEqual(to: again) else { throw .policyViolation(.mismatch) }
        return new
    }

    /// `tokenpin token change-pin`: the card PIN (OpenPGP PW1, the PIV PIN), changed on the card after showing
    /// its tries left. Prompts: card PIN, new card PIN, new card PIN again.
    package func changeCardPIN(_ interaction: some Interaction) throws(ServiceError) {
        let card = try managedCard(interaction, command: "change-pin")
        defer { card.close() }
        let tries = card.pinTriesLeft
        guard tries > 0 else { throw .cardRefused(failure(.blocked, card: card.label).reason) }
        if try changeCardPINOnKeypad(card, interaction) { return }
        let current = try readCardPIN(card, interaction)
        let new = try readNewCardPIN(interaction, maximum: card.pinMaxLength)
        do throws(TokenCardError) {
            try card.changePIN(current: current, new: new)
        } catch {
            throw .cardRefused(failure(error, card: card.label).reason)
        }
        logger.info("card PIN changed", [("card", card.label)])
    }

    /// `tokenpin token unblock`: a new card PIN with the card's unblocking credential: the OpenPGP Reset Code
    /// (or its admin PIN with `admin`), the PIV PUK. Prompts: the credential, new card PIN, new card PIN again.
    package func unblockCardPIN(_ interaction: some Interaction, admin: Bool) throws(ServiceError) {
        let card = try managedCard(interaction, command: "unblock")
        defer { card.close() }
        if card.kind == .pkcs11 { throw .usage(PKCS11Token.unblockAdvice) }
        let credential = admin ? UnblockCredential.adminPIN : card.unblockCredentials.first
        guard let credential, card.unblockCredentials.contains(credential) else {
            throw .usage(
                "card \(card.label) (\(card.kind.displayName)) has no admin PIN to unblock with; "
                    + "run `tokenpin token unblock` without --admin")
        }
        let tries = card.triesLeft(credential)
        // nil: the card cannot tell without spending a try (a PIV card's PUK outside YubiKey metadata).
        guard tries != 0 else { throw .cardRefused(blockedCredential(credential, card: card)) }
        if try unblockCardPINOnKeypad(card, with: credential, triesLeft: tries, interaction) { return }
        let secret = try interaction.readSecret(unblockPrompt(credential, card: card, triesLeft: tries))
        let new = try readNewCardPIN(interaction, maximum: card.pinMaxLength)
        do throws(TokenCardError) {
            try card.unblock(with: credential, secret: secret, newPIN: new)
        } catch {
            throw .cardRefused(
                failure(error, card: card.label).reason.replacing("card PIN", with: credential.name))
        }
        logger.info("card PIN unblocked", [("card", card.label), ("with", credential.name)])
    }

    /// The prompt for an unblocking credential.
    func unblockPrompt(_ credential: UnblockCredential, card: any TokenApplication, triesLeft: Int?) -> SecretPrompt {
        switch credential {
        case .resetCode: .resetCode(card: card.promptName, triesLeft: triesLeft ?? 0)
        case .adminPIN: .adminPIN(card: card.promptName, triesLeft: triesLeft ?? 0)
        case .puk: .puk(card: card.promptName, triesLeft: triesLeft)
        }
    }

    /// What to say when the unblocking credential itself is blocked, and what is left to do.
    func blockedCredential(_ credential: UnblockCredential, card: any TokenApplication) -> String {
        switch credential {
        case .resetCode:
            "card \(card.label) has no usable Reset Code; unblock with the admin PIN (`tokenpin token unblock --admin`)"
        case .adminPIN:
            "the admin PIN of card \(card.label) is blocked; only a factory reset helps"
        case .puk:
            "the PUK of card \(card.label) is blocked; only resetting its PIV application helps (its keys are lost)"
        }
    }
}

extension UnblockCredential {
    /// How messages name it.
    var name: String {
        switch self {
        case .resetCode: "Reset Code"
        case .adminPIN: "admin PIN"
        case .puk: "PUK"
        }
    }
}
