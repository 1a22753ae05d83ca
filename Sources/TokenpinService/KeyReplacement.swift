import TokenpinCore
import TokenpinOpenPGP

extension PINService {
    /// The word a person types to let an operation replace a key on a card.
    public static let replaceWord = "replace"

    /// Before a new key is written to the decryption slot of `card`: shows the key it replaces (algorithm,
    /// fingerprint, creation date, as the card's application related data describes them) and asks for
    /// `replace` to be typed. An empty slot asks nothing; `assumeYes` (`--yes`) is the only way past a key
    /// without a person. A refusal throws `.cancelled` and nothing is written.
    func confirmKeyReplacement(on card: OpenedCard, assumeYes: Bool, _ interaction: some Interaction) throws {
        var current = CardKeyDescription(.decryption, in: card.data)
        if !current.isPresent && card.data.keyStatus[.decryption] == nil {
            // No key information (cards before OpenPGP 3.3) and no fingerprint or date: a key generated without
            // them (as tokenpin generates one) may still be there; its public key says so.
            let publicKey = try? card.run { session throws(OpenPGPError) in try session.publicKey(for: .decryption) }
            current.isPresent = publicKey != nil
        }
        guard current.isPresent else { return }
        logger.info("a key on the card is to be replaced", [("card", card.label), ("key", current.description)])
        if assumeYes { return }
        let question =
            "Card \(card.label) holds a decryption key (\(current)). --generate-key replaces it with a "
            + "new cv25519 key: messages encrypted to the old key can no longer be decrypted with this card."
        guard try interaction.confirmTyped(question, word: Self.replaceWord) else { throw ServiceError.cancelled }
    }
}
