import FoundationEssentials
internal import TokenpinAPDU
import TokenpinCardCrypto
internal import TokenpinCore
import TokenpinPIV

/// The PIV application (SP 800-73-4: PIV and CAC cards, YubiKeys) as a token: a key management key (`9D` or a
/// retired slot `82`–`95`) agreeing a secret by ECDH on P-256/P-384, or decrypting with RSA 2048.
///
/// Opening reads the card's identity and PIN tries through `PIVCard` (SELECT, CHUID, the YubiKey version and
/// serial, the tries query); everything else is read when asked. Every method runs its commands in one
/// transaction. PINs are checked for length before any APDU, so a PIN the card cannot take costs no try.
final class PIVToken: TokenApplication {
    let kind = TokenApplicationKind.piv
    let reader: String
    let card: PIVCard
    let identity: String
    let label: String
    let pinMaxLength = PIVSession.maxPINLength
    /// Why the card cannot be named, when it has no GUID, no serial and no key in `9D` (then it cannot be bound).
    private let identityProblem: String?

    /// The slot a binding uses when none is named: key management, `9D`.
    static let defaultSlot = PIVSlot.keyManagement
    /// The factory management key: `01 02 … 08` three times.
    static let defaultManagementKey: [UInt8] = Array(1...8) + Array(1...8) + Array(1...8)
    /// The algorithm `--generate-key` makes.
    static let generatedAlgorithm = PIVAlgorithm.eccP256
    /// The key algorithms a PIV token binds to, as messages list them.
    static let supportedList = "P-256, P-384 (ECDH), RSA 2048"

    private init(card: PIVCard, reader: String, identity: String, identityProblem: String?) {
        self.card = card
        self.reader = reader
        self.identity = identity
        self.identityProblem = identityProblem
        label = card.label
    }

    /// Opens the PIV application on `connection`.
    ///
    /// - Throws: `.applicationNotFound` for a card without PIV, `.transport` when the card went away,
    ///   `.malformed` for answers that do not parse.
    static func open(connection: any CardConnection, reader: String) throws(TokenCardError) -> PIVToken {
        let card = try map { () throws(PIVError) in try PIVCard.open(connection) }
        if let identity = card.identity {
            return PIVToken(card: card, reader: reader, identity: identity, identityProblem: nil)
        }
        // Neither GUID nor serial: the key in 9D names the card.
        let content = try map { () throws(PIVError) in
            try card.transaction { session throws(PIVError) in try card.content(of: defaultSlot, session) }
        }
        if case .key(let publicKey, _) = content, let identity = try? PIVCard.keyIdentity(publicKey) {
            return PIVToken(card: card, reader: reader, identity: identity, identityProblem: nil)
        }
        return PIVToken(
            card: card, reader: reader, identity: "piv-key:none",
            identityProblem: "the card has no CHUID GUID, no serial and no key in slot 9d to name it by")
    }

    var pinTriesLeft: Int {
        switch card.pinStatus {
        case .retriesLeft(let tries): tries
        // Verified: the last VERIFY succeeded and reset the counter to its maximum, 3 on the cards tokenpin knows.
        case .verified: 3
        }
    }

    /// The card PIN's tries left, read now with VERIFY without data (which spends none); verified counts as 3.
    func pinTriesNow() -> Int? {
        let status = try? card.transaction { session throws(PIVError) in try session.pinStatus() }
        switch status {
        case .retriesLeft(let tries): return tries
        case .verified: return 3
        case nil: return nil
        }
    }

    /// Read once, when asked: the key in the default slot a binding can use, or why there is none.
    private lazy var defaultSlotKey: Result<TokenCardKey, TokenCardError> = {
        do throws(TokenCardError) {
            return .success(try bindableKey(slot: nil))
        } catch {
            return .failure(error)
        }
    }()

    /// `nistp256 in 9d`: the default slot's key, when a binding can use it.
    var keyDescription: String? {
        guard identityProblem == nil, case .success(let key) = defaultSlotKey else { return nil }
        return "\(key.algorithm) in \(key.slot ?? Self.slotName(Self.defaultSlot))"
    }

    /// Read once, when asked: whether the default slot holds a key a binding can use.
    private lazy var defaultSlotProblem: String? = {
        if let identityProblem { return identityProblem }
        guard case .failure(let error) = defaultSlotKey else { return nil }
        let problem = Self.describe(error)
        // Point at a retired slot whose key could be bound instead (a key tokenpin generated, for one).
        guard let other = retiredKey(), let slot = other.slot else { return problem }
        return problem + "; slot \(slot) holds a \(other.algorithm) key (bind it with --slot \(slot))"
    }()

    /// The first retired key management slot (`82`-`95`) holding a key a binding can use, read in one transaction.
    private func retiredKey() -> TokenCardKey? {
        let card = self.card
        let found = try? card.transaction { session throws(PIVError) -> (PIVSlot, PIVSlotContent)? in
            for number in 1...20 {
                guard let slot = PIVSlot.retired(number) else { continue }
                let content = try card.content(of: slot, session)
                if case .key = content { return (slot, content) }
            }
            return nil
        }
        guard let (slot, content) = found ?? nil else { return nil }
        return try? Self.cardKey(content, in: slot)
    }

    var unusableReason: String? { defaultSlotProblem }

    // MARK: Keys

    /// The slot a binding names: `9d`, `82`...; nil names `9D`.
    static func slot(_ name: String?) throws(TokenCardError) -> PIVSlot {
        guard let name else { return defaultSlot }
        guard name.count == 2, let byte = UInt8(name, radix: 16), let slot = PIVSlot(rawValue: byte) else {
            throw .unusable("\(name) is not a PIV key slot (9a, 9c, 9d, 9e, 82-95)")
        }
        return slot
    }

    /// The slot's name as a binding records it: two lower-case hex digits.
    static func slotName(_ slot: PIVSlot) -> String { slot.description.lowercased() }

    func bindableKey(slot name: String?) throws(TokenCardError) -> TokenCardKey {
        let slot = try Self.slot(name)
        let card = self.card
        let content = try Self.map { () throws(PIVError) in
            try card.transaction { session throws(PIVError) in try card.content(of: slot, session) }
        }
        return try Self.cardKey(content, in: slot)
    }

    /// The key a binding keeps for what `slot` holds, or why it cannot be bound.
    static func cardKey(_ content: PIVSlotContent, in slot: PIVSlot) throws(TokenCardError) -> TokenCardKey {
        let name = slotName(slot)
        switch content {
        case .empty:
            throw .unusable("slot \(name) holds no key (or no certificate naming one)")
        case .unsupported(let what):
            throw .unusable("slot \(name) holds a key tokenpin cannot use: \(what); supported: \(supportedList)")
        case .key(let publicKey, _):
            guard slot.isKeyManagement else {
                throw .unusable(
                    "slot \(name) holds a \(publicKey.algorithm?.name ?? "") key for signing or authentication; "
                        + "keys that agree secrets live in 9d or 82-95")
            }
            let algorithm: TokenKeyAlgorithm
            let key: [UInt8]
            var exponent: [UInt8]?
            switch publicKey {
            case .ecc(let pivAlgorithm, let point):
                algorithm = .ecdh(pivAlgorithm == .eccP384 ? .nistP384 : .nistP256)
                key = point
            case .rsa(let modulus, let e):
                let bits = TokenKeyAlgorithm.bitCount(modulus)
                guard bits == 2048 else {
                    throw .unusable("slot \(name) holds an RSA \(bits) key; supported: \(supportedList)")
                }
                algorithm = .rsa(bits: 2048)
                key = modulus
                exponent = e
            }
            do {
                let judged = try algorithm.judge(key: key, exponent: exponent)
                return TokenCardKey(slot: name, algorithm: algorithm, publicKey: judged.key, exponent: judged.exponent)
            } catch {
                throw .unusable("slot \(name): \(error.description)")
            }
        }
    }

    // MARK: Verification

    /// Refuses, before any APDU, a PIN the card cannot take: the PIN's counter stays as it is.
    static func checkPIN(_ pin: borrowing SecretBytes, _ name: String) throws(TokenCardError) {
        guard (1...PIVSession.maxPINLength).contains(pin.count) else {
            throw .refused(
                "a PIV \(name) has 1 to \(PIVSession.maxPINLength) bytes, this one has \(pin.count); "
                    + "nothing was sent to the card")
        }
        guard !pin.withUnsafeBytes({ $0.contains(0xFF) }) else {
            throw .refused("a PIV \(name) cannot contain the byte FF; nothing was sent to the card")
        }
    }

    var keyOperationName: String { "GENERAL AUTHENTICATE" }

    func answer(pin: borrowing SecretBytes, binding: TokenBinding, algorithm: TokenKeyAlgorithm)
        throws(TokenCardError) -> SecretBytes
    {
        try Self.checkPIN(pin, "PIN")
        return try answer(binding: binding, algorithm: algorithm) { session throws(PIVError) in
            try session.verify(pin: pin)
        }
    }

    /// The bound key's answer to the binding's challenge after `verify` verified the PIN, in one transaction.
    func answer(
        binding: TokenBinding, algorithm: TokenKeyAlgorithm, verify: (PIVSession) throws(PIVError) -> Void
    ) throws(TokenCardError) -> SecretBytes {
        let slot = try Self.slot(binding.slot)
        let challenge = [UInt8](binding.ephemeralPublicKey)
        let pivAlgorithm: PIVAlgorithm
        switch algorithm {
        case .ecdh(.nistP256): pivAlgorithm = .eccP256
        case .ecdh(.nistP384): pivAlgorithm = .eccP384
        case .rsa(bits: 2048): pivAlgorithm = .rsa2048
        default: throw .unusable("a PIV token does not use \(algorithm); supported: \(Self.supportedList)")
        }
        let card = self.card
        let secret = try Self.map { () throws(PIVError) -> SecretBytes in
            try card.transaction { session throws(PIVError) -> SecretBytes in
                try verify(session)
                if pivAlgorithm == .rsa2048 {
                    return try session.decrypt(slot: slot, algorithm: .rsa2048, cryptogram: challenge)
                }
                return try session.sharedSecret(slot: slot, algorithm: pivAlgorithm, peerPoint: challenge)
            }
        }
        if pivAlgorithm == .rsa2048, secret.count != TokenKeyAlgorithm.rsaSecretLength {
            throw .malformed(
                "the card decrypted \(secret.count) bytes, not the \(TokenKeyAlgorithm.rsaSecretLength) of the slot's secret"
            )
        }
        return secret
    }

    /// VERIFY of the PIV PIN (`80`), in a transaction of its own; a PIN the card cannot take is refused first.
    func checkPIN(_ pin: borrowing SecretBytes) throws(TokenCardError) {
        try Self.checkPIN(pin, "PIN")
        let card = self.card
        try Self.map { () throws(PIVError) in
            try card.transaction { session throws(PIVError) in try session.verify(pin: pin) }
        }
    }

    // MARK: Card authentication

    /// The card-authentication key (`9E`) as a binding records it, read from YubiKey metadata or the slot's
    /// certificate; nil when the slot holds none tokenpin can check (P-256, P-384, RSA 2048).
    func cardAuthenticationKey() -> CardAuthenticationKey? {
        let card = self.card
        let content = try? card.transaction { session throws(PIVError) in
            try card.content(of: .cardAuthentication, session)
        }
        guard case .key(let publicKey, _)? = content else { return nil }
        switch publicKey {
        case .ecc(.eccP256, let point): return CardAuthenticationKey(algorithm: "nistp256", publicKey: Data(point))
        case .ecc(.eccP384, let point): return CardAuthenticationKey(algorithm: "nistp384", publicKey: Data(point))
        case .rsa(let modulus, let exponent):
            let n = Array(modulus.drop { $0 == 0 })
            let e = Array(exponent.drop { $0 == 0 })
            guard n.count == 256, (1...8).contains(e.count) else { return nil }
            return CardAuthenticationKey(algorithm: "rsa2048", publicKey: Data(n), exponent: Data(e))
        default: return nil
        }
    }

    /// GENERAL AUTHENTICATE with `9E` on 32 (48) fresh random bytes, or an RSA block of random bytes, and the
    /// answer checked against the recorded public key (SP 800-73-4 part 2, §3.2.4; the CAK needs no PIN).
    func prove(_ key: CardAuthenticationKey) throws(TokenCardError) {
        let card = self.card
        let slot = PIVSlot.cardAuthentication
        let refused = TokenCardError.refused(
            "the card did not prove it holds the card-authentication key recorded when it was bound")
        do {
            switch key.algorithm {
            case "nistp256", "nistp384":
                let algorithm: PIVAlgorithm = key.algorithm == "nistp256" ? .eccP256 : .eccP384
                let curve: WeierstrassCurve = key.algorithm == "nistp256" ? .nistP256 : .nistP384
                let challenge = SecureRandom.bytes(algorithm.coordinateLength ?? 32)
                let signature = try Self.map { () throws(PIVError) -> [UInt8] in
                    try card.transaction { session throws(PIVError) in
                        try session.sign(slot: slot, algorithm: algorithm, input: challenge)
                    }
                }
                let good = try CardSignatures.ecdsaVerify(
                    der: signature, digest: challenge, publicPoint: [UInt8](key.publicKey), on: curve)
                guard good else { throw refused }
            case "rsa2048":
                // A block below the modulus (a leading zero byte) of random bytes: the card's raw RSA of it, raised
                // to e here, must give it back.
                let block = [0x00] + SecureRandom.bytes(255)
                let answer = try Self.map { () throws(PIVError) -> [UInt8] in
                    try card.transaction { session throws(PIVError) in
                        try session.sign(slot: slot, algorithm: .rsa2048, input: block)
                    }
                }
                guard answer.count == 256 else { throw refused }
                let back = try answer.withUnsafeBytes { bytes in
                    try RSAKeys.rawPublic(
                        SecretBytes(copying: bytes), modulus: [UInt8](key.publicKey),
                        publicExponent: [UInt8](key.exponent ?? Data()))
                }
                guard back == block else { throw refused }
            default:
                throw refused
            }
        } catch let error as TokenCardError {
            if case .transport = error { throw error }
            throw refused
        } catch {
            throw refused
        }
    }

    // MARK: PIN and PUK

    func changePIN(current: borrowing SecretBytes, new: borrowing SecretBytes) throws(TokenCardError) {
        try Self.checkPIN(current, "PIN")
        try Self.checkPIN(new, "new PIN")
        let card = self.card
        try Self.map { () throws(PIVError) in
            try card.transaction { session throws(PIVError) in
                try session.changeReferenceData(current: current, new: new)
            }
        }
    }

    let unblockCredentials: [UnblockCredential] = [.puk]

    /// The PUK's tries, read when first asked: from YubiKey metadata; nil on other cards, which have no way to
    /// tell them without spending one (no VERIFY of the PUK, `81`, is defined by any client).
    private(set) lazy var pukTriesLeft: Int? = {
        let card = self.card
        let tries = try? card.transaction { session throws(PIVError) -> Int? in
            guard try card.hasMetadata(session) else { return nil }
            return try session.retries(puk: true).left
        }
        return tries ?? nil
    }()

    func triesLeft(_ credential: UnblockCredential) -> Int? {
        switch credential {
        case .puk: pukTriesLeft
        case .resetCode, .adminPIN: 0
        }
    }

    func unblock(with credential: UnblockCredential, secret: borrowing SecretBytes, newPIN: borrowing SecretBytes)
        throws(TokenCardError)
    {
        guard credential == .puk else {
            throw .unusable("a PIV card unblocks its PIN with the PUK, not a \(credential)")
        }
        try Self.checkPIN(secret, "PUK")
        try Self.checkPIN(newPIN, "new PIN")
        let card = self.card
        try Self.map { () throws(PIVError) in
            try card.transaction { session throws(PIVError) in try session.unblockPIN(puk: secret, newPIN: newPIN) }
        }
    }

    func close() { card.close() }

    // MARK: Errors

    /// Runs `body`, its `PIVError` as the service's `TokenCardError`.
    static func map<R: ~Copyable>(_ body: () throws(PIVError) -> R) throws(TokenCardError) -> R {
        do {
            return try body()
        } catch {
            throw tokenCardError(error)
        }
    }

    /// The service's view of a PIV error.
    static func tokenCardError(_ error: PIVError) -> TokenCardError {
        switch error {
        case .wrongPIN(let tries): .wrongPIN(triesLeft: tries)
        case .blocked: .blocked
        case .applicationNotFound: .applicationNotFound
        case .transport(let inner): .transport(inner)
        case .malformed: .malformed(error.description)
        case .referencedDataNotFound: .unusable(error.description)
        case .invalidArgument(let detail): .refused(detail)
        default: .refused(error.description)
        }
    }

    /// A short description of what a slot holds, for questions.
    static func describe(_ content: PIVSlotContent) -> String {
        switch content {
        case .empty: "empty"
        case .unsupported(let what): what
        case .key(let key, let subject):
            (key.algorithm?.name ?? "a key") + (subject.map { ", certificate for \($0)" } ?? "")
        }
    }

    /// A token card error as a reason, for `unusableReason`.
    static func describe(_ error: TokenCardError) -> String {
        switch error {
        case .applicationNotFound: "the card has no PIV application"
        case .wrongPIN(let tries): "wrong PIN, \(tries) tries left"
        case .blocked: "the PIV PIN is blocked"
        case .transport(let inner): "the card connection failed: \(inner)"
        case .malformed(let why), .unusable(let why), .refused(let why): why
        case .keypadRefused(let refusal): refusal.description
        }
    }
}
