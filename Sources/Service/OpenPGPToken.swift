internal import TokenpinAPDU
internal import TokenpinCore
import TokenpinOpenPGP

/// The OpenPGP card application as a token: its decryption key (cv25519, RSA, NIST or brainpool ECDH) answers
/// PSO:DECIPHER after VERIFY PW1, its PW status gives the tries left, and the Reset Code or the admin PIN
/// unblock it.
final class OpenPGPToken: TokenApplication {
    let card: OpenPGPCard
    let reader: String
    /// The connection the card was opened on: only to find the reader's keypad (TokenKeypad.swift); commands go
    /// through `card`'s transactions.
    let connection: any CardConnection

    private init(card: OpenPGPCard, reader: String, connection: any CardConnection) {
        self.card = card
        self.reader = reader
        self.connection = connection
    }

    /// Selects the OpenPGP application on `connection` and reads its data (2 APDUs, one transaction).
    static func open(connection: any CardConnection, reader: String) throws(TokenCardError) -> OpenPGPToken {
        do {
            return OpenPGPToken(card: try OpenPGPCard.open(connection), reader: reader, connection: connection)
        } catch {
            throw Self.cardError(error)
        }
    }

    var kind: TokenApplicationKind { .openpgp }

    var data: ApplicationRelatedData { card.data }

    var identity: String { Self.serial(of: data.aid) }

    /// `0006:12345678 (Yubico)`.
    var label: String {
        let serial = identity
        let name = data.aid.manufacturerName.map { " (\($0))" } ?? ""
        return String(serial.prefix(4)) + ":" + String(serial.dropFirst(4)) + name
    }

    /// `YubiKey 5 12345678` (a YubiKey's OpenPGP serial is its decimal serial, BCD-coded; 5 for the 3.x
    /// application), `Nitrokey 1234ABCD`, `Gnuk 1234ABCD`, else `OpenPGP card FFFE:0000AAAA`.
    var promptName: String {
        let aid = data.aid
        switch aid.manufacturer {
        case 0x0006: return (aid.version.major >= 3 ? "YubiKey 5 " : "YubiKey ") + aid.serialString
        case 0x000F: return "Nitrokey " + aid.serialString
        case 0xF517: return "Gnuk " + aid.serialString
        default: return "OpenPGP card " + cardLabel(serial: identity)
        }
    }

    var pinTriesLeft: Int { data.passwordStatus.retriesPW1 }

    var pinMaxLength: Int { data.passwordStatus.maxLengthPW1 }

    /// No key, an algorithm tokenpin does not support (named, with the list of those it does), or a key it cannot
    /// use (judged from the public key, read when first asked: `TokenKeyAlgorithm.judge`).
    var unusableReason: String? {
        if let reason = attributesProblem { return reason }
        guard case .failure(let error) = decryptionKey else { return nil }
        switch error {
        case .unusable(let why), .malformed(let why), .refused(let why): return why
        default: return "the decryption key cannot be read (\(error))"
        }
    }

    /// Why the attributes read at open rule the decryption key out, or nil.
    private var attributesProblem: String? {
        guard let attributes = data.algorithmAttributes[.decryption] else {
            return "the card does not say which algorithm its decryption key uses"
        }
        guard let algorithm = TokenKeyAlgorithm(attributes: attributes) else {
            return
                "the decryption key is \(attributes), which tokenpin cannot use (it supports \(TokenKeyAlgorithm.supportedList))"
        }
        if !data.hasDecryptionKey { return "the decryption key slot is set to \(algorithm) but holds no key" }
        return nil
    }

    /// The decryption key as a binding would keep it, read (GET PUBLIC KEY) and judged once, when first asked.
    private lazy var decryptionKey: Result<TokenCardKey, TokenCardError> = {
        do throws(TokenCardError) {
            guard let algorithm = data.algorithmAttributes[.decryption].flatMap(TokenKeyAlgorithm.init(attributes:))
            else { throw .unusable("the card has no usable decryption key") }
            let publicKey = try run { session throws(OpenPGPError) in try session.publicKey(for: .decryption) }
            return .success(try Self.key(algorithm, publicKey))
        } catch {
            return .failure(error)
        }
    }()

    /// The decryption key's algorithm, when a binding can use the key as it is.
    var keyDescription: String? {
        guard unusableReason == nil, case .success(let key) = decryptionKey else { return nil }
        return key.algorithm.description
    }

    /// The card's serial as tokenpin records it: manufacturer and serial number, 12 hex digits.
    static func serial(of aid: ApplicationIdentifier) -> String {
        Hex.encode([UInt8(aid.manufacturer >> 8), UInt8(aid.manufacturer & 0xFF)]) + aid.serialString
    }

    /// The decryption key as it is on the card (GET PUBLIC KEY; nothing is changed). OpenPGP has no slots.
    func bindableKey(slot: String?) throws(TokenCardError) -> TokenCardKey {
        guard slot == nil else { throw .unusable("an OpenPGP card has no key slots to choose (--slot is for PIV)") }
        if let reason = attributesProblem { throw .unusable(reason) }
        return try decryptionKey.get()
    }

    /// The binding's form of a public key the card returned, checked against its attributes.
    private static func key(_ algorithm: TokenKeyAlgorithm, _ publicKey: CardPublicKey) throws(TokenCardError)
        -> TokenCardKey
    {
        do {
            let checked = try algorithm.bindingKey(from: publicKey)
            return TokenCardKey(slot: nil, algorithm: algorithm, publicKey: checked.key, exponent: checked.exponent)
        } catch {
            throw .unusable(error.description)
        }
    }

    var keyOperationName: String { "PSO:DECIPHER" }

    /// VERIFY PW1 (hashed as the KDF-DO asks) and PSO:DECIPHER of the binding's challenge, in one transaction.
    func answer(pin: borrowing SecretBytes, binding: TokenBinding, algorithm: TokenKeyAlgorithm)
        throws(TokenCardError) -> SecretBytes
    {
        let challenge = [UInt8](binding.ephemeralPublicKey)
        return try run { session throws(OpenPGPError) -> SecretBytes in
            try session.verify(.pw1, pin: pin, keyDerivation: card.keyDerivation(session))
            return try Self.decipher(challenge, algorithm, session)
        }
    }

    /// PSO:DECIPHER of a binding's challenge, after PW1 was verified.
    static func decipher(_ challenge: [UInt8], _ algorithm: TokenKeyAlgorithm, _ session: OpenPGPSession)
        throws(OpenPGPError) -> SecretBytes
    {
        switch algorithm {
        case .cv25519: try session.decipher(ephemeralPublicKey: challenge)
        case .ecdh: try session.decipher(ecdhPoint: challenge)
        case .rsa: try session.decipher(rsaCryptogram: challenge)
        }
    }

    /// The card PIN's tries left, read now (an empty VERIFY, or the PW status).
    func pinTriesNow() -> Int? {
        try? card.transaction { session throws(OpenPGPError) in try session.retriesLeft(.pw1) }
    }

    /// VERIFY PW1 for PSO:DECIPHER (`82`), in a transaction of its own (OpenPGP card 3.4.1, §7.2.2).
    func checkPIN(_ pin: borrowing SecretBytes) throws(TokenCardError) {
        try run { session throws(OpenPGPError) in
            try session.verify(.pw1, pin: pin, keyDerivation: card.keyDerivation(session))
        }
    }

    /// A new cv25519 decryption key: the admin PIN asked and checked (VERIFY PW3), then the key it replaces shown
    /// and confirmed (`replace` typed, or `assumeYes`), then PUT DATA and GENERATE with the admin PIN.
    ///
    /// With `adminKeypad`: the key it replaces shown and confirmed first, then the admin PIN on the keypad, PUT DATA
    /// and GENERATE in one transaction (`generateOnKeypad`); nothing is written before the card accepted PW3.
    func generateKey(slot: String?, assumeYes: Bool, adminKeypad: CardKeypad?, _ interaction: some Interaction) throws
        -> TokenCardKey
    {
        guard slot == nil else {
            throw TokenCardError.unusable("an OpenPGP card has no key slots to choose (--slot is for PIV)")
        }
        if let adminKeypad {
            try confirmReplacement(assumeYes: assumeYes, interaction)
            interaction.report(
                .keypadCredentialEntry(
                    reader: reader, card: promptName, credential: .adminPIN, triesLeft: data.passwordStatus.retriesPW3))
            do {
                return try Self.key(.cv25519, generateOnKeypad(adminKeypad))
            } catch {
                throw Self.adminPINFailure(error)
            }
        }
        let adminPIN = try interaction.readSecret(
            .adminPIN(card: promptName, triesLeft: data.passwordStatus.retriesPW3))
        do {
            try run { session throws(OpenPGPError) in
                try session.verify(.pw3, pin: adminPIN, keyDerivation: card.keyDerivation(session))
            }
        } catch {
            throw Self.adminPINFailure(error)
        }
        try confirmReplacement(assumeYes: assumeYes, interaction)
        let publicKey = try run { session throws(OpenPGPError) -> CardPublicKey in
            try session.verify(.pw3, pin: adminPIN, keyDerivation: card.keyDerivation(session))
            try session.setAlgorithmAttributes(.cv25519, for: .decryption)
            return try session.generateKey(for: .decryption)
        }
        return try Self.key(.cv25519, publicKey)
    }

    /// A wrong or blocked PW3 named as the admin PIN: the bind that generates a key has checked the card PIN before,
    /// and its messages would otherwise call this one the card PIN.
    static func adminPINFailure(_ error: TokenCardError) -> TokenCardError {
        switch error {
        case .wrongPIN(let tries):
            .refused("wrong admin PIN, \(tries) \(tries == 1 ? "try" : "tries") left on the card")
        case .blocked: .refused("the admin PIN is blocked; only a factory reset helps")
        default: error
        }
    }

    /// Shows the decryption key `--generate-key` would replace (algorithm, fingerprint, creation date) and asks
    /// for `replace` to be typed. An empty slot asks nothing; `assumeYes` (`--yes`) is the only way past a key
    /// without a person. A refusal throws `.cancelled`.
    private func confirmReplacement(assumeYes: Bool, _ interaction: some Interaction) throws {
        var current = CardKeyDescription(.decryption, in: data)
        if !current.isPresent && data.keyStatus[.decryption] == nil {
            // No key information (cards before OpenPGP 3.3) and no fingerprint or date: a key generated without
            // them (as tokenpin generates one) may still be there; its public key says so.
            let publicKey = try? run { session throws(OpenPGPError) in try session.publicKey(for: .decryption) }
            current.isPresent = publicKey != nil
        }
        guard current.isPresent else { return }
        if assumeYes { return }
        let question =
            "Card \(label) holds a decryption key (\(current)). --generate-key replaces it with a "
            + "new cv25519 key: messages encrypted to the old key can no longer be decrypted with this card."
        guard try interaction.confirmTyped(question, word: PINService.replaceWord) else { throw ServiceError.cancelled }
    }

    func changePIN(current: borrowing SecretBytes, new: borrowing SecretBytes) throws(TokenCardError) {
        try run { session throws(OpenPGPError) in
            try session.changeReferenceData(
                .pw1, current: current, new: new, keyDerivation: card.keyDerivation(session))
        }
    }

    var unblockCredentials: [UnblockCredential] { [.resetCode, .adminPIN] }

    func triesLeft(_ credential: UnblockCredential) -> Int? {
        switch credential {
        case .resetCode: data.passwordStatus.retriesResetCode
        case .adminPIN: data.passwordStatus.retriesPW3
        case .puk: 0
        }
    }

    func unblock(with credential: UnblockCredential, secret: borrowing SecretBytes, newPIN: borrowing SecretBytes)
        throws(TokenCardError)
    {
        switch credential {
        case .resetCode:
            try run { session throws(OpenPGPError) in
                try session.resetRetryCounter(
                    resetCode: secret, newPIN: newPIN, keyDerivation: card.keyDerivation(session))
            }
        case .adminPIN:
            try run { session throws(OpenPGPError) in
                let kdf = try card.keyDerivation(session)
                try session.verify(.pw3, pin: secret, keyDerivation: kdf)
                try session.resetRetryCounter(newPIN: newPIN, keyDerivation: kdf)
            }
        case .puk:
            throw .unusable("an OpenPGP card has no PUK; unblock with the Reset Code or the admin PIN")
        }
    }

    func close() { card.close() }

    /// One transaction of the card, with OpenPGP's errors in the token's terms.
    func run<R: ~Copyable>(_ body: (OpenPGPSession) throws(OpenPGPError) -> R) throws(TokenCardError) -> R {
        do {
            return try card.transaction(body)
        } catch {
            throw Self.cardError(error)
        }
    }

    /// An OpenPGP error in the token's terms.
    static func cardError(_ error: OpenPGPError) -> TokenCardError {
        switch error {
        case .wrongPIN(let retries): .wrongPIN(triesLeft: retries)
        case .blocked: .blocked
        case .applicationNotFound: .applicationNotFound
        case .transport(let inner): .transport(inner)
        case .malformed(let detail): .malformed(detail.detail)
        default: .refused(error.description)
        }
    }
}
