extension PINService {
    /// The word a person types to let an operation replace a key on a card.
    package static let replaceWord = "replace"
}
