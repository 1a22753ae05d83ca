import FoundationEssentials
import TokenpinAPDU
import TokenpinCore

/// Which card to use when several are present (`--reader`, `--serial`, the `reader` setting).
public struct CardSelection: Sendable, Equatable {
    /// A reader name or glob.
    public var reader: String?
    /// A card serial: the 8 hex digits of the serial number, or the 12 with the manufacturer.
    public var serial: String?
    /// The token application to bind through (`--app`); nil: OpenPGP where the card has it, else PIV.
    public var application: TokenApplicationKind?
    /// The RFC 7512 URI of the PKCS#11 key to use (`--token-uri`); nil: the only usable one.
    public var tokenURI: String?

    /// Creates a selection.
    public init(
        reader: String? = nil, serial: String? = nil, application: TokenApplicationKind? = nil, tokenURI: String? = nil
    ) {
        self.reader = reader
        self.serial = serial
        self.application = application
        self.tokenURI = tokenURI
    }

    func accepts(reader name: String) -> Bool { reader.map { readerMatches(name, pattern: $0) } ?? true }

    func accepts(serial candidate: String?) -> Bool {
        guard let serial else { return true }
        guard let candidate else { return false }
        if TokenApplicationKind(identity: serial.lowercased()) != .openpgp {
            return candidate.lowercased() == serial.lowercased()
        }
        let wanted = serial.replacing(":", with: "").uppercased()
        return candidate == wanted || candidate.hasSuffix(wanted) && wanted.count == 8
    }
}

/// Which cards an operation may reach.
///
/// Local mode acts with the user's own smart-card rights (pcscd's policy applies), so any card will do. The
/// daemon runs as root: for a non-root peer it sets `.boundCardOnly`, so a user reaches only the card bound
/// to their own record.
public enum CardScope: Sendable, Equatable {
    /// Every card the selection allows: local mode, and root through the daemon.
    case any
    /// Only the card bound to the user's record, recognised by the serial read from the card before any PIN
    /// is sent: `readers` and `status` show only that card, the card-PIN commands manage only that card, and
    /// with no binding they manage none.
    case boundCardOnly
}

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
    /// The card source with the configuration's deadlines (`card-timeout`), or the error that says there is none.
    func readers() throws(ServiceError) -> any CardReaders {
        guard let cards else { throw .tokenUnavailable("this tokenpin has no card readers configured") }
        return cards.withTimeouts(of: configuration)
    }

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
        case .transport(let timeout as CardTimeoutError):
            // Nothing was counted; the reader is named, since the card in it did not get a word in.
            return TokenFailure(kind: .unavailable, reason: "card \(card): \(timeout)")
        case .transport(let inner):
            let described = (try? readers())?.describe(inner) ?? .tokenUnavailable("\(inner)")
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

    // MARK: Finding cards

    /// Opens the card in `reader` and the token application of `kind` on it: its SELECT and the reads it keeps
    /// (2 APDUs for OpenPGP). With no kind, the one the selection names, else OpenPGP where the card has it,
    /// else PIV.
    func openCard(reader: String, kind: TokenApplicationKind? = nil) throws(TokenFailure) -> any TokenApplication {
        if (kind ?? selection.application) == .pkcs11 { return try openPKCS11Token(uri: reader) }
        let kinds = (kind ?? selection.application).map { [$0] } ?? TokenApplicationKind.cardApplications
        let connection: any CardConnection
        do {
            connection = try readers().open(reader)
        } catch {
            if case .serviceUnavailable(let why) = error { throw TokenFailure(kind: .service, reason: why) }
            if case .tokenUnavailable(let why) = error { throw TokenFailure(kind: .unavailable, reason: why) }
            if case .cardHeldElsewhere(let why) = error {
                throw TokenFailure(kind: .unavailable, reason: why, heldElsewhere: true)
            }
            throw TokenFailure(kind: .unavailable, reason: error.message)
        }
        for kind in kinds {
            do {
                return try openTokenApplication(kind, connection: connection, reader: reader)
            } catch {
                guard case .applicationNotFound = error else {
                    connection.close()
                    throw failure(error, card: reader)
                }
            }
        }
        connection.close()
        let names = kinds.map(\.displayName).joined(separator: " or ")
        throw TokenFailure(kind: .unavailable, reason: "the card in \(reader) has no \(names) application")
    }

    /// Every reader the selection allows, with what is in it.
    func probeCards(selection: CardSelection? = nil) throws(ServiceError) -> [CardProbe] {
        let selection = selection ?? self.selection
        if selection.application == .pkcs11 { return try probePKCS11Tokens(selection) }
        var probes: [CardProbe] = []
        for reader in try readers().list() where selection.accepts(reader: reader.name) {
            guard reader.cardPresent else {
                probes.append(CardProbe(reader: reader.name, problem: "no card"))
                continue
            }
            do {
                let card = try openCard(reader: reader.name)
                // Read before the close: a PIV card reads what its default slot holds only when asked.
                var probe = CardProbe(card)
                if let revoked = revokedCards.entry(for: card.identity) {
                    probe.unusableReason = "revoked by this site (\(revoked.source))"
                }
                probes.append(probe)
                card.close()
            } catch {
                if error.kind == .service { throw error.serviceError }
                probes.append(CardProbe(reader: reader.name, problem: error.reason))
            }
        }
        return probes
    }

    /// Opens the bound card's application in whichever reader holds the card, trying the reader it was bound in
    /// first; the card is recognised by the identity read from it. Never sends a PIN anywhere else.
    ///
    /// A binding that recorded a card-authentication key (PIV `9E`) also needs the card to sign a fresh challenge
    /// with it (no PIN) first: a card that only claims the identity gets no PIN and is not the bound card.
    func openEnrolledCard(_ binding: TokenBinding) throws(TokenFailure) -> any TokenApplication {
        // A card the site revoked is refused before any reader is touched: no PIN can reach it.
        if let revoked = revokedCards.reason(for: binding.serial) {
            throw TokenFailure(kind: .unavailable, reason: revoked)
        }
        if binding.applicationKind == .pkcs11 { return try openEnrolledPKCS11Token(binding) }
        let serial = binding.serial
        let lastReader = binding.reader
        let kind = binding.applicationKind
        // Why readers that hold a card could not be read: reported when the card is found in none, since it may
        // be one of them (a card that answers nonsense or stalls is not a card that is absent; a reader whose card
        // another program holds exclusively could not be looked at, and the person must hear who holds it).
        var problems: [TokenFailure] = []
        var impostor: String?
        func isBound(_ card: any TokenApplication) -> Bool {
            guard card.identity == serial else { return false }
            guard let key = binding.cardAuthentication else { return true }
            do {
                try card.prove(key)
                return true
            } catch {
                guard case .refused = error else {
                    // A card that fails to answer (a reader past its deadline) proves nothing either way.
                    problems.append(failure(error, card: card.reader))
                    return false
                }
                logger.warning(
                    "a card claims the bound identity but does not prove it",
                    [("card", card.label), ("reader", card.reader)])
                impostor = card.reader
                return false
            }
        }
        func open(_ reader: String) -> (any TokenApplication)? {
            do {
                let card = try openCard(reader: reader, kind: kind)
                if isBound(card) { return card }
                card.close()
            } catch {
                problems.append(error)
            }
            return nil
        }
        if let lastReader, selection.accepts(reader: lastReader), let card = open(lastReader) { return card }
        let presences: [ReaderPresence]
        do {
            presences = try readers().list()
        } catch {
            if case .serviceUnavailable(let why) = error { throw TokenFailure(kind: .service, reason: why) }
            throw TokenFailure(kind: .unavailable, reason: error.message)
        }
        // The card was pulled from the reader it was bound in: that reader failed for want of a card.
        if !presences.contains(where: { $0.name == lastReader && $0.cardPresent }) { problems.removeAll() }
        let candidates = presences.filter {
            $0.cardPresent && selection.accepts(reader: $0.name) && $0.name != lastReader
        }
        if presences.isEmpty { throw TokenFailure(kind: .unavailable, reason: "no card reader is connected") }
        for reader in candidates {
            if let card = open(reader.name) { return card }
        }
        if let impostor {
            throw TokenFailure(
                kind: .unavailable,
                reason: "the card in \(impostor) claims to be card \(cardLabel(serial: serial)) but does not prove it "
                    + "(its card-authentication key did not sign tokenpin's challenge); no PIN was sent to it")
        }
        if let service = problems.first(where: { $0.kind == .service }) { throw service }
        if let held = problems.first(where: \.heldElsewhere) {
            throw TokenFailure(
                kind: .unavailable, reason: "card \(cardLabel(serial: serial)) could not be looked for: " + held.reason)
        }
        if !problems.isEmpty {
            throw TokenFailure(
                kind: .unavailable,
                reason: "card \(cardLabel(serial: serial)) is not in any reader that answered ("
                    + problems.map(\.reason).joined(separator: "; ") + ")")
        }
        let othersPresent = presences.contains { $0.cardPresent && selection.accepts(reader: $0.name) }
        throw TokenFailure(
            kind: .unavailable,
            reason: "card \(cardLabel(serial: serial)) is not in any reader"
                + (othersPresent ? " (other cards are)" : " (no card present)"))
    }

    /// Under `.boundCardOnly`, the probes of cards this user may touch: their own bound card, or when they may
    /// bind (`card-bind`) and have no binding, the cards no other record binds. Also how many were hidden.
    func touchable(_ probes: [CardProbe]) throws(ServiceError) -> (visible: [CardProbe], hidden: Int) {
        guard cardScope == .boundCardOnly else { return (probes, 0) }
        let own = try guarded { () throws -> String? in try boundCard()?.serial }
        let mayBind = own == nil ? try mayBindFreeCard() : false
        let others = mayBind ? cardAccess?.identities(boundToOthersThan: user) ?? [] : []
        let visible = probes.filter { probe in
            guard let serial = probe.serial else { return false }
            if let own { return serial == own }
            return mayBind && !others.contains(serial)
        }
        return (visible, probes.filter { $0.serial != nil }.count - visible.count)
    }

    /// The card to bind or manage: the only usable one, the one the selection names, or the person's choice.
    ///
    /// Under `.boundCardOnly` only cards the user may touch are considered, listed or named in a message: a card
    /// bound to another user's record is refused (77) before anything is asked, without saying which it is.
    func chooseCard(_ interaction: some Interaction) throws(ServiceError) -> CardProbe {
        let (visible, hidden) = try touchable(try probeCards())
        let present = visible.filter { $0.kind != nil && selection.accepts(serial: $0.serial) }
        // A revoked card is never bound, nor managed without a binding: only a named one says why.
        let probes = present.filter { revokedCards.entry(for: $0.serial ?? "") == nil }
        if probes.isEmpty, let revoked = present.lazy.compactMap({ revokedCards.reason(for: $0.serial ?? "") }).first {
            throw .tokenUnavailable(revoked)
        }
        let cards = selection.application.map { "\($0.displayName) card" } ?? "OpenPGP or PIV card"
        guard !probes.isEmpty else {
            if hidden > 0 {
                throw .permissionDenied(
                    "through tokenpind you may bind only a card no other user's record binds, and the "
                        + (hidden == 1 ? "card present is" : "cards present are")
                        + " bound to another record; nothing was asked or sent to a card")
            }
            if selection.serial != nil {
                throw .tokenUnavailable("no \(cards) with serial \(selection.serial ?? "") is present")
            }
            throw .tokenUnavailable("no \(cards) is present; insert the token and try again")
        }
        if probes.count == 1 { return probes[0] }
        if selection.application == .pkcs11 { throw pkcs11Ambiguity(probes) }
        let index = try interaction.choose("Which card?", options: probes.map { "\($0.label) in \($0.reader)" })
        guard probes.indices.contains(index) else { throw .cancelled }
        return probes[index]
    }

    // MARK: Verify

    /// Verifies the user: the token first when it is enabled and present, else (or on failure, with
    /// `fallback = allow`) the PIN; `method` forces one. In `mode = both`, the PIN and the card together.
    ///
    /// Token failures never consume PIN tries.
    public func verify(_ interaction: some Interaction, method: VerificationMethod? = nil) throws(ServiceError)
        -> VerifyReport
    {
        let report = try guarded { () throws -> VerifyReport in try verifyRecord(interaction, method: method) }
        announceOtherAttempts(report, interaction)
        return report
    }

    /// Tells the user what remote and other attempts did, at the own or local success that cleared them.
    func announceOtherAttempts(_ report: VerifyReport, _ interaction: some Interaction) {
        if let notice = report.otherAttempts { interaction.report(.otherAttempts(notice)) }
    }

    /// `verify` on the record as it is now.
    func verifyRecord(_ interaction: some Interaction, method: VerificationMethod?) throws -> VerifyReport {
        let record = try loadRecord()
        if countsApart {
            // Remote and other attempts get the PIN only: the card stays with the person at this machine.
            let tokenNeeded =
                record.slot(.composite) != nil || modeInForce(record)?.source == .configuration
                || (record.slot(.token) != nil && !fallbackAllowed(record))
            if tokenNeeded || method == .token { throw tokenRefusedToThisClass() }
            return try verifyPIN(interaction, record: record)
        }
        if record.slot(.composite) != nil {
            if method == .pin { throw ServiceError.tokenUnavailable("mode = both: the PIN alone cannot verify") }
            return try verifyBoth(interaction, prompt: .pin) { _, _, _ in }
        }
        guard record.slot(.token) != nil else {
            if method == .token { throw ServiceError.tokenNotEnabled }
            return try verifyPIN(interaction, record: record)
        }
        if modeInForce(record)?.source == .configuration {
            if method == .pin {
                throw ServiceError.tokenUnavailable("mode = both (configuration): the PIN alone cannot verify")
            }
            return try verifyTokenAndPIN(interaction)
        }
        var tokenFailure: String?
        var sentChallenge: Data?
        if method != .pin {
            do {
                return try store.withLock(user: user) { () throws -> VerifyReport in
                    // The slot as it is now: another verification may have re-sealed it since it was read.
                    guard let current = try store.load(user: user) else {
                        throw ServiceError.notEnrolled(user: user, path: recordPath)
                    }
                    return try verifyToken(record: current, interaction)
                }
            } catch let failure as TokenFailure {
                let fallback = method == nil && fallbackAllowed(record)
                interaction.report(
                    .tokenFailed(reason: failure.reason, fallback: fallback, cardTriesLeft: failure.cardTriesLeft))
                if !fallback {
                    if failure.kind == .refused {
                        return VerifyReport(
                            outcome: .tokenRejected(reason: failure.reason), tokenFailure: failure.reason,
                            counter: record.counter)
                    }
                    throw failure.serviceError
                }
                tokenFailure = failure.reason
                sentChallenge = failure.sentChallenge
            }
        }
        var report = try verifyPIN(interaction, record: record, retiringChallenge: sentChallenge)
        report.tokenFailure = tokenFailure
        return report
    }

    /// `fallback = deny` in the configuration or in the record wins.
    func fallbackAllowed(_ record: EnrolmentRecord) -> Bool {
        configuration.fallback == .allow && record.policy.fallback == .allow
    }

    /// One token verification, under the user's lock: open the token slot with the card, then re-seal it under
    /// a fresh challenge so the card answer just used never opens it again. The PIN counter is not touched.
    func verifyToken(record: EnrolmentRecord, _ interaction: some Interaction) throws -> VerifyReport {
        guard let slot = record.slot(.token), let binding = slot.token else { throw ServiceError.tokenNotEnabled }
        let opened = try openTokenSlot(slot, interaction)
        var record = record
        try sealToken(record: &record, vaultKey: opened.vaultKey, binding: binding, reader: opened.card.reader)
        try releaseKey(opened.vaultKey)
        let notice = takeOtherAttempts(&record)
        record.updated = time.now
        try store.save(record)
        logger.info("verified", [("user", user), ("method", "token")])
        var report = VerifyReport(
            outcome: .verified(method: .token), kdfNanoseconds: opened.nanoseconds, counter: record.counter,
            card: opened.card)
        report.otherAttempts = notice
        return report
    }

    /// The vault key a card opened, and which card it was.
    struct OpenedTokenSlot: ~Copyable {
        let vaultKey: SecretBytes
        let card: VerifiedCard
        let nanoseconds: UInt64
    }

    /// Finds the enrolled card, VERIFYs its PIN, has it compute the shared secret (PSO:DECIPHER), derives the
    /// token key and opens `slot`. The shared secret and the key are wiped before this returns.
    func openTokenSlot(_ slot: VaultSlot, _ interaction: some Interaction) throws -> OpenedTokenSlot {
        guard let binding = slot.token else {
            throw StoreError(.corrupt, path: recordPath, "token slot without a binding")
        }
        let card = try openEnrolledCard(binding)
        defer { card.close() }
        let shared = try cardSecret(card, binding: binding, interaction)
        let start = time.monotonicNanoseconds
        let kek = try TokenKeys.tokenKey(sharedSecret: shared, binding: binding, salt: [UInt8](slot.kdf.salt))
        let vaultKey = slot.open(keyEncryptionKey: kek, user: user)
        guard let vaultKey else {
            throw TokenFailure(
                kind: .refused,
                reason: "card \(card.label) does not open the token slot (was its decryption key replaced?)",
                cardTriesLeft: card.pinTriesNow(), sentChallenge: binding.ephemeralPublicKey)
        }
        return OpenedTokenSlot(
            vaultKey: vaultKey,
            card: VerifiedCard(serial: card.identity, reader: card.reader, removalWatch: card.removalWatch),
            nanoseconds: time.monotonicNanoseconds &- start)
    }

    /// What a slot is sealed under: a binding with a challenge that never crossed the reader line, and the
    /// secret the card's private key will answer to it, computed here.
    ///
    /// Only `freshAgreement` makes one, so no seal can take a secret a card answered: an answer that crossed the
    /// line (a sniffed USB bus, a hostile reader driver, a fake card replaying it) is only ever checked or used to
    /// open, never sealed under. The next opening sends the challenge to the card, and re-seals under a new one.
    struct KeyAgreement: ~Copyable {
        let binding: TokenBinding
        let secret: SecretBytes

        fileprivate init(binding: TokenBinding, secret: consuming SecretBytes) {
            self.binding = binding
            self.secret = secret
        }
    }

    /// A fresh challenge for the card key in `binding` (an ephemeral pair for ECDH, a random secret encrypted to
    /// an RSA key) and the secret the card would answer to it, computed here from the card's public key. No APDU
    /// is sent; ephemeral private keys are wiped when this returns, and the new challenge replaces the binding's
    /// (TokenKeyAgreement.swift). The same for every application (OpenPGP, PIV, PKCS#11): only the card's public
    /// key and algorithm are used.
    func freshAgreement(_ binding: TokenBinding, reader: String?) throws -> KeyAgreement {
        var binding = binding
        let fresh =
            try PKCS11Token.freshOAEPChallenge(for: binding) ?? bindingAlgorithm(binding).freshChallenge(for: binding)
        binding.ephemeralPublicKey = Data(fresh.challenge)
        if let reader { binding.reader = reader }
        return KeyAgreement(binding: binding, secret: fresh.secret)
    }

    /// The algorithm a stored binding names.
    func bindingAlgorithm(_ binding: TokenBinding) throws -> TokenKeyAlgorithm {
        guard let algorithm = TokenKeyAlgorithm(bindingName: binding.algorithm) else {
            throw StoreError(.corrupt, path: recordPath, "token slot names an unknown algorithm")
        }
        return algorithm
    }

    /// Asks for the card PIN (showing the card's tries left), verifies it on the card and has the bound key
    /// answer the slot's challenge: VERIFY and the key operation (PSO:DECIPHER, GENERAL AUTHENTICATE) in one
    /// transaction.
    func cardSecret(
        _ card: any TokenApplication, binding: TokenBinding, _ interaction: some Interaction,
        pin held: consuming SecretBytes? = nil
    ) throws -> SecretBytes {
        let tries = card.pinTriesLeft
        let algorithm = try bindingAlgorithm(binding)
        let cardPIN: SecretBytes
        switch consume held {
        case .some(let given):
            // Asked (and checked on the card) earlier in the same operation: `--generate-key`.
            cardPIN = given
        case .none:
            guard tries > 0 else { throw failure(.blocked, card: card.label) }
            if let keypad = keypad(for: card, interaction) {
                return try keypadSecret(card, keypad, binding: binding, algorithm: algorithm, interaction)
            }
            cardPIN = try readCardPIN(card, interaction)
        }
        do {
            return try card.answer(pin: cardPIN, binding: binding, algorithm: algorithm)
        } catch {
            throw answerFailure(error, card: card, binding: binding)
        }
    }

    /// A card's refusal to answer the binding's challenge, the challenge marked as sent when the key was asked.
    func answerFailure(_ error: TokenCardError, card: any TokenApplication, binding: TokenBinding) -> TokenFailure {
        var failure = failure(error, card: card.label)
        switch error {
        case .wrongPIN, .blocked, .keypadRefused: break  // VERIFY refused or never sent: the key was not asked
        default: failure.sentChallenge = binding.ephemeralPublicKey
        }
        return failure
    }

    /// Re-seals the token slot under a fresh challenge when its challenge is still `sent`, one that may have
    /// reached the card in a verification that then failed: whatever answer the card gave opens nothing from now
    /// on. No APDU; run where the vault key is open under the user's lock (the PIN's counted attempt). True when it
    /// re-sealed (the caller saves the record).
    @discardableResult
    func retireTokenChallenge(_ sent: Data?, record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes) throws
        -> Bool
    {
        guard let sent, let binding = record.slot(.token)?.token, binding.ephemeralPublicKey == sent else {
            return false
        }
        try sealToken(record: &record, vaultKey: vaultKey, binding: binding, reader: nil)
        logger.info("token challenge retired", [("user", user)])
        return true
    }

    /// `cardSecret` for binding: a refusal is an error, there is nothing to fall back to.
    func requireCardSecret(
        _ card: any TokenApplication, binding: TokenBinding, _ interaction: some Interaction,
        pin: consuming SecretBytes? = nil
    ) throws -> SecretBytes {
        do {
            return try cardSecret(card, binding: binding, interaction, pin: pin)
        } catch let failure as TokenFailure {
            throw ServiceError.cardRefused(failure.reason)
        }
    }

    /// `mode = both`: the card first (its own counter), then one counted PIN attempt on the composite slot, which
    /// is then re-sealed under a fresh challenge. `onSuccess` gets the record, the vault key and the PIN.
    func verifyBoth(
        _ interaction: some Interaction, prompt: SecretPrompt,
        onSuccess: (inout EnrolmentRecord, borrowing SecretBytes, borrowing PIN) throws -> Void
    )
        throws -> VerifyReport
    {
        let record = try loadRecord()
        if let early = earlyOutcome(record) { return VerifyReport(outcome: early, counter: record.counter) }
        guard let slot = record.slot(.composite), let binding = slot.token else { throw ServiceError.tokenNotEnabled }
        let card = try openCardForBoth(binding, interaction)
        defer { card.close() }
        let pin = try readAttemptPIN(interaction, prompt, record: record)
        return try finishBoth(card: card, counter: record.counter, interaction) { () throws -> VerifyReport in
            let shared = try cardSecret(card, binding: binding, interaction)
            let pinKeyHolder = KeyHolder()
            return try countedAttempt(
                pin: pin, slotKind: .composite,
                finishKey: { pinKey, slot in
                    guard let current = slot.token else {
                        throw StoreError(.corrupt, path: recordPath, "composite slot without a binding")
                    }
                    guard current.ephemeralPublicKey == binding.ephemeralPublicKey else {
                        // The card answered for a key another verification has replaced meanwhile.
                        throw TokenFailure(
                            kind: .unavailable,
                            reason: "the token slot was re-sealed by another verification while "
                                + "the card was asked; try again")
                    }
                    pinKeyHolder.key = pinKey.duplicate()
                    let tokenKey = try TokenKeys.tokenKey(
                        sharedSecret: shared, binding: current, salt: [UInt8](slot.kdf.salt))
                    return try TokenKeys.compositeKey(
                        tokenKey: tokenKey, pinKey: pinKey, binding: current,
                        salt: [UInt8](slot.kdf.salt))
                },
                onSuccess: { record, vaultKey in
                    // Re-seal under a fresh challenge: the PIN's key and KDF parameters stay, the card's part changes.
                    guard let slot = record.slot(.composite), let current = slot.token,
                        let pinKey = pinKeyHolder.key.take()
                    else {
                        throw StoreError(.corrupt, path: recordPath, "composite slot vanished during verification")
                    }
                    try sealComposite(
                        record: &record, vaultKey: vaultKey, pinKey: pinKey, kdf: slot.kdf,
                        agreement: freshAgreement(current, reader: card.reader))
                    try onSuccess(&record, vaultKey, pin)
                })
        }
    }

    /// The bound card for a verification that needs the card and the PIN: a card that cannot be opened is
    /// reported as a token failure without fallback (there is none in `mode = both`) and thrown.
    func openCardForBoth(_ binding: TokenBinding, _ interaction: some Interaction) throws -> any TokenApplication {
        do {
            return try openEnrolledCard(binding)
        } catch {
            interaction.report(.tokenFailed(reason: error.reason, fallback: false))
            throw error.serviceError
        }
    }

    /// The end of a verification that needs the card and the PIN (`mode = both`, from the record or from the
    /// configuration): a success names both and the card it was made with; a card failure is reported with no
    /// fallback and answered as `tokenRejected` when the card refused, anything else is thrown.
    func finishBoth(
        card: any TokenApplication, counter: RetryCounter, _ interaction: some Interaction,
        _ attempt: () throws -> VerifyReport
    ) throws -> VerifyReport {
        do {
            var report = try attempt()
            if case .verified = report.outcome {
                report.outcome = .verified(method: .both)
                report.card = VerifiedCard(serial: card.identity, reader: card.reader, removalWatch: card.removalWatch)
            }
            return report
        } catch let failure as TokenFailure {
            interaction.report(
                .tokenFailed(reason: failure.reason, fallback: false, cardTriesLeft: failure.cardTriesLeft))
            if failure.kind == .refused {
                return VerifyReport(
                    outcome: .tokenRejected(reason: failure.reason), tokenFailure: failure.reason, counter: counter)
            }
            throw failure.serviceError
        }
    }

    // MARK: Toggle

    /// `toggle token on`: the PIN first (the seeds' rule), then binds the chosen card and proves the binding
    /// once with the card PIN before saving it. Prompts: PIN, admin PIN (only to generate a key), card PIN.
    ///
    /// `mode` `.both` binds in `both` whatever the configuration says (the stricter of the two wins); on a card
    /// already bound in `either` it re-binds it in `both` (see `rebindInBoth`).
    public func enableToken(
        _ interaction: some Interaction, generateKey: Bool = false, assumeYes: Bool = false,
        mode: VerificationMode? = nil, slot: String? = nil
    ) throws(ServiceError) -> VerifyReport {
        try guarded { () throws -> VerifyReport in
            let record = try loadRecord()
            if let binding = record.slot(.token)?.token ?? record.slot(.composite)?.token {
                if mode == .both && record.slot(.composite) == nil { return try rebindInBoth(interaction) }
                throw ServiceError.tokenAlreadyEnabled(serial: cardLabel(serial: binding.serial))
            }
            if let early = earlyOutcome(record) { return VerifyReport(outcome: early, counter: record.counter) }
            if cardScope == .boundCardOnly {
                // Who may bind a card no record binds (`card-bind`), before anything is asked.
                guard let cardAccess else {
                    throw ServiceError.permissionDenied("through tokenpind only root may bind a card here")
                }
                if let refusal = cardAccess.bindRefusal(for: user) { throw ServiceError.permissionDenied(refusal) }
            }
            // Find the card before asking for anything: a missing card costs no PIN try.
            let probe = try chooseCard(interaction)
            if cardScope == .boundCardOnly, let serial = probe.serial, cardAccess?.claim(serial, for: user) != true {
                throw ServiceError.permissionDenied(
                    "another user is binding this card right now; nothing was asked or sent to it")
            }
            if slot == nil && !probe.usable && !generateKey {
                let generation =
                    probe.kind == .piv
                    ? "generates a P-256 key in an empty retired slot of its PIV application"
                    : "creates a cv25519 decryption key on it (replacing the card's decryption key)"
                throw ServiceError.tokenUnavailable(
                    "card \(probe.label) is not usable: \(probe.unusableReason ?? "unknown"); "
                        + "`tokenpin toggle token on --generate-key` \(generation)")
            }
            if let slot, !generateKey { try judgeKey(in: slot, of: probe) }
            let pin = try readAttemptPIN(interaction, .pin, record: record)
            return try countedAttempt(pin: pin) { record, vaultKey in
                try store.save(record)  // the PIN was right: keep the restored counter whatever happens next
                try bind(
                    record: &record, vaultKey: vaultKey, pin: pin, probe: probe, slot: slot,
                    generateKey: generateKey, assumeYes: assumeYes, mode: bindingMode(requested: mode), interaction)
            }
        }
    }

    /// Reads and judges the key in the named `slot` of the card `probe` found, before anything is asked: a key
    /// tokenpin cannot use is refused (exit 6) without a PIN spent.
    func judgeKey(in slot: String, of probe: CardProbe) throws {
        let card = try openCard(reader: probe.reader, kind: probe.kind)
        defer { card.close() }
        do {
            _ = try card.bindableKey(slot: slot)
        } catch {
            if case .unusable(let why) = error {
                throw ServiceError.tokenUnavailable("card \(card.label) is not usable: \(why)")
            }
            throw failure(error, card: card.label)
        }
    }

    /// Binds the card `probe` found, which must still be in its reader: the identity is read from the card again
    /// before any PIN is sent to it. Binds to the key already on the card (in `slot` where the application has
    /// slots), or with `generateKey` to a new one.
    func bind(
        record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes, pin: borrowing PIN, probe: CardProbe,
        slot: String?, generateKey: Bool, assumeYes: Bool, mode: VerificationMode? = nil,
        _ interaction: some Interaction
    ) throws {
        let mode = mode ?? configuration.mode
        let reader = probe.reader
        let card = try openCard(reader: reader, kind: probe.kind)
        defer { card.close() }
        guard let serial = probe.serial, card.identity == serial else {
            throw ServiceError.tokenUnavailable(
                "the card in \(reader) changed since it was chosen: it was "
                    + "\(probe.serial.map(cardLabel(serial:)) ?? "unknown"), it is now \(card.label); nothing was sent to it"
            )
        }
        let key: TokenCardKey
        var cardPIN: SecretBytes?
        do {
            if generateKey {
                // Nothing destructive before the card PIN: it is checked first (a wrong one stops here, the card's
                // keys untouched), then the admin PIN or management key, then what the key replaces is shown and
                // confirmed, and only then is the key generated.
                let tries = card.pinTriesLeft
                guard tries > 0 else { throw TokenCardError.blocked }
                let typed = try interaction.readSecret(.cardPIN(card: card.promptName, triesLeft: tries))
                try card.checkPIN(typed)
                cardPIN = consume typed
                // The OpenPGP admin PIN goes in on the keypad where it can (a PIV management key never does).
                let adminKeypad = card.kind == .openpgp ? keypad(for: card, credential: .adminPIN, interaction) : nil
                key = try card.generateKey(slot: slot, assumeYes: assumeYes, adminKeypad: adminKeypad, interaction)
                logger.info(
                    "generated a key for the token",
                    [("card", card.label), ("algorithm", key.algorithm.description), ("slot", key.slot ?? "-")])
            } else {
                // The key already on the card, whatever supported algorithm it uses: nothing on the card changes.
                key = try card.bindableKey(slot: slot)
            }
        } catch TokenCardError.keypadRefused(let refusal) {
            throw Self.keypadError(refusal)
        } catch let error as TokenCardError {
            if case .unusable(let why) = error {
                throw ServiceError.tokenUnavailable("card \(card.label) is not usable: \(why)")
            }
            throw ServiceError.cardRefused(failure(error, card: card.label).reason)
        }
        let algorithm = key.algorithm
        var binding = TokenBinding(
            serial: card.identity, cardPublicKey: Data(key.publicKey), ephemeralPublicKey: Data(),
            reader: reader, algorithm: algorithm.bindingName,
            cardPublicExponent: key.exponent.map { Data($0) })
        binding.setApplication(card.kind, slot: key.slot)
        binding.cardAuthentication = card.cardAuthenticationKey()
        (card as? PKCS11Token)?.describe(&binding)
        // Prove the binding with one challenge: the card's answer must equal the secret computed here from its
        // public key. That answer crossed the reader line, so the slots are sealed under a second challenge,
        // which never did (sealTokenSlots).
        let proof = try freshAgreement(binding, reader: reader)
        let shared = try requireCardSecret(card, binding: proof.binding, interaction, pin: cardPIN.take())
        guard shared.isEqual(to: proof.secret) else {
            throw ServiceError.cardRefused(
                "card \(card.label) answered \(card.keyOperationName) with a secret that does not match its public key"
            )
        }
        try sealTokenSlots(record: &record, vaultKey: vaultKey, pin: pin, binding: binding, mode: mode)
        record.policy = .init(mode: mode, fallback: configuration.fallback)
        record.updated = time.now
        logger.info("token enabled", [("user", user), ("card", card.label), ("mode", mode.rawValue)])
        interaction.report(.typeChanged(type: .token, enabled: true))
    }

    /// Seals the vault key for the card of `binding` under a fresh challenge: a `token` slot (`mode = either`), or
    /// a `composite` slot that replaces the PIN slot (`mode = both`).
    func sealTokenSlots(
        record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes, pin: borrowing PIN,
        binding: TokenBinding, mode: VerificationMode
    ) throws {
        if mode == .both {
            let pinKDF = try chooseKDF()
            let pinKey = try deriveKey(pinKDF, from: pin.secret)
            try sealComposite(
                record: &record, vaultKey: vaultKey, pinKey: pinKey, kdf: pinKDF,
                agreement: freshAgreement(binding, reader: nil))
            record.setSlot(.pin, nil)
            record.setSlot(.token, nil)
        } else {
            try sealToken(record: &record, vaultKey: vaultKey, binding: binding, reader: nil)
        }
    }

    /// Seals the vault key into the `token` slot for the card of `binding`, under a fresh challenge and a fresh
    /// BLAKE2b salt; `reader` (when known) is where the card was just used.
    func sealToken(
        record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes, binding: TokenBinding, reader: String?
    ) throws {
        let agreement = try freshAgreement(binding, reader: reader)
        let kdf = KDFParameters(algorithm: .blake2b)
        let tokenKey = try TokenKeys.tokenKey(
            sharedSecret: agreement.secret, binding: agreement.binding,
            salt: [UInt8](kdf.salt))
        let created = record.slot(.token)?.created ?? time.now
        record.setSlot(
            .token,
            try VaultSlot.seal(
                vaultKey, keyEncryptionKey: tokenKey, kind: .token, kdf: kdf,
                token: agreement.binding, user: user, created: created))
    }

    /// Seals the vault key into the `composite` slot: the PIN's key (derived with `kdf`, whose salt the slot
    /// keeps) mixed with the token key of `agreement`.
    func sealComposite(
        record: inout EnrolmentRecord, vaultKey: borrowing SecretBytes, pinKey: borrowing SecretBytes,
        kdf: KDFParameters, agreement: borrowing KeyAgreement
    ) throws {
        let salt = [UInt8](kdf.salt)
        let binding = agreement.binding
        let tokenKey = try TokenKeys.tokenKey(sharedSecret: agreement.secret, binding: binding, salt: salt)
        let compositeKey = try TokenKeys.compositeKey(tokenKey: tokenKey, pinKey: pinKey, binding: binding, salt: salt)
        let created = record.slot(.composite)?.created ?? time.now
        record.setSlot(
            .composite,
            try VaultSlot.seal(
                vaultKey, keyEncryptionKey: compositeKey, kind: .composite,
                kdf: kdf, token: binding, user: user, created: created))
    }

    /// `toggle token off`: removes the binding after a counted verification, like switching it on.
    ///
    /// `method` nil or `.pin`: one counted PIN attempt (a wrong PIN counts exactly as in `verify`; prompt: PIN).
    /// `.token`: the card PIN and PSO:DECIPHER opening the token slot (prompt: card PIN). The report names the
    /// method used. In `mode = both` the PIN and the card are needed (prompts: PIN, card PIN) and a plain PIN
    /// slot takes the composite slot's place.
    public func disableToken(
        _ interaction: some Interaction,
        method: VerificationMethod? = nil
    ) throws(ServiceError) -> VerifyReport {
        try guarded { () throws -> VerifyReport in
            let record = try loadRecord()
            if record.slot(.composite) != nil {
                if method == .pin {
                    throw ServiceError.tokenUnavailable(
                        "mode = both: the PIN alone cannot switch the token off; the card is needed too")
                }
                return try verifyBoth(interaction, prompt: .pin) { record, vaultKey, pin in
                    let kdf = try chooseKDF()
                    let pinKey = try deriveKey(kdf, from: pin.secret)
                    record.setSlot(
                        .pin,
                        try VaultSlot.seal(
                            vaultKey, keyEncryptionKey: pinKey, kind: .pin, kdf: kdf,
                            user: user, created: time.now))
                    record.setSlot(.composite, nil)
                    record.policy.mode = .either
                    logger.info("token disabled", [("user", user), ("method", "both")])
                    interaction.report(.typeChanged(type: .token, enabled: false))
                }
            }
            guard record.slot(.token) != nil else { throw ServiceError.tokenNotEnabled }
            if modeInForce(record)?.source == .configuration {
                // Else the PIN alone would switch off the card the configuration demands, then verify alone.
                if method == .pin {
                    throw ServiceError.tokenUnavailable(
                        "mode = both (configuration): the PIN alone cannot switch the token off; the card is needed too"
                    )
                }
                return try verifyTokenAndPIN(interaction, then: .removeToken)
            }
            if method == .token { return try disableTokenWithCard(interaction) }
            if let early = earlyOutcome(record) { return VerifyReport(outcome: early, counter: record.counter) }
            let pin = try readAttemptPIN(interaction, .pin, record: record)
            return try countedAttempt(pin: pin) { record, _ in
                record.setSlot(.token, nil)
                logger.info("token disabled", [("user", user), ("method", "pin")])
                interaction.report(.typeChanged(type: .token, enabled: false))
            }
        }
    }

    /// `toggle token off --method token`: under the user's lock, the card opens the token slot, then the slot goes.
    /// A refusal by the card is an outcome (`tokenRejected`); a card that is not there is an error.
    func disableTokenWithCard(_ interaction: some Interaction) throws -> VerifyReport {
        try store.withLock(user: user) { () throws -> VerifyReport in
            guard var record = try store.load(user: user) else {
                throw ServiceError.notEnrolled(user: user, path: recordPath)
            }
            guard let slot = record.slot(.token) else { throw ServiceError.tokenNotEnabled }
            do {
                _ = try openTokenSlot(slot, interaction)
            } catch let failure as TokenFailure {
                interaction.report(
                    .tokenFailed(reason: failure.reason, fallback: false, cardTriesLeft: failure.cardTriesLeft))
                guard failure.kind == .refused else { throw failure.serviceError }
                return VerifyReport(
                    outcome: .tokenRejected(reason: failure.reason), tokenFailure: failure.reason,
                    counter: record.counter)
            }
            record.setSlot(.token, nil)
            record.updated = time.now
            try store.save(record)
            logger.info("token disabled", [("user", user), ("method", "token")])
            interaction.report(.typeChanged(type: .token, enabled: false))
            return VerifyReport(outcome: .verified(method: .token), counter: record.counter)
        }
    }
}

// MARK: Readers, status and the card's own PIN

extension PINService {
    /// Every reader the selection allows and the card in it; under `.boundCardOnly` only the reader holding
    /// the card bound to the record (none without a binding, and then no card is read at all).
    public func listReaders() throws(ServiceError) -> [ReaderInfo] {
        guard cardScope == .boundCardOnly else {
            return try withPinpads(
                probeCards().map { probe in
                    probe.kind == nil && probe.problem == "no card"
                        ? ReaderInfo(name: probe.reader, cardPresent: false) : probe.info
                })
        }
        let bound = try guarded { () throws -> String? in try boundCard()?.serial }
        let mayBind = bound == nil ? try mayBindFreeCard() : false
        // No card is read at all for a user who may touch none.
        guard bound != nil || mayBind else { return [] }
        return try withPinpads(touchable(try probeCards()).visible.map(\.info))
    }

    /// Whether this user, through the daemon, may bind a card no other record binds: enrolled, and `card-bind`
    /// lets them.
    func mayBindFreeCard() throws(ServiceError) -> Bool {
        guard let cardAccess else { return false }
        let enrolled = try guarded { () throws -> Bool in try store.exists() && store.load(user: user) != nil }
        return enrolled && cardAccess.bindRefusal(for: user) == nil
    }

    /// The card bound to the record (token or composite slot), or nil when there is no record or no binding.
    func boundCard() throws -> TokenBinding? {
        guard try store.exists(), let record = try store.load(user: user) else { return nil }
        return record.slot(.token)?.token ?? record.slot(.composite)?.token
    }

    /// What the token side looks like for `status` and `types`; problems (pcscd down) are reported, not thrown.
    public func tokenStatus(binding: TokenBinding?) -> TokenStatus {
        guard cards != nil else { return TokenStatus(readers: [], problem: "no card readers configured") }
        do {
            // A card bound through one application is looked at through it (a YubiKey bound through PIV).
            var scoped = self
            if scoped.selection.application == nil, let binding {
                scoped.selection.application = binding.applicationKind
            }
            let readers = try scoped.listReaders()
            let matching = binding.flatMap { binding in readers.first { $0.serial == binding.serial } }
            var status = TokenStatus(
                readers: readers, matchingReader: matching?.name, cardPINTriesLeft: matching?.cardPINTriesLeft)
            status.describe(binding)
            status.revoked = binding.flatMap { revokedCards.entry(for: $0.serial)?.source }
            return status
        } catch {
            var status = TokenStatus(readers: [], problem: error.message)
            status.describe(binding)
            status.revoked = binding.flatMap { revokedCards.entry(for: $0.serial)?.source }
            return status
        }
    }

    /// The card the card-PIN commands act on: the bound card when there is one (found by the serial read from
    /// the card, before any prompt), else the one chosen. Under `.boundCardOnly` only the bound card, and no
    /// card at all without a binding.
    func managedCard(_ interaction: some Interaction, command: String) throws -> any TokenApplication {
        let binding = try boundCard()
        if cardScope == .boundCardOnly {
            let local = "manage another card with `tokenpin --local token \(command)`, under your own smart-card rights"
            guard let binding else {
                throw ServiceError.permissionDenied(
                    "through tokenpind you manage only the card bound to your record, "
                        + "and no card is bound; " + local)
            }
            if let named = selection.serial, !CardSelection(serial: named).accepts(serial: binding.serial) {
                throw ServiceError.permissionDenied(
                    "through tokenpind you manage only the card bound to your record "
                        + "(\(cardLabel(serial: binding.serial))), not card \(named); " + local)
            }
        }
        if let binding { return try openEnrolledCard(binding) }
        let chosen = try chooseCard(interaction)
        return try openCard(reader: chosen.reader, kind: chosen.kind)
    }

    /// Reads a new card PIN twice and checks its length against the card's limits (6 up to PW1's maximum).
    func readNewCardPIN(_ interaction: some Interaction, maximum: Int) throws -> SecretBytes {
        let new = try interaction.readSecret(.newCardPIN)
        // The length is checked before the confirmation is asked, and the refusal says what the card takes.
        let most = max(6, maximum)
        guard (6...most).contains(new.count) else {
            throw ServiceError.cardPINRefused(
                "a card PIN has 6 to \(most) characters on this card, not \(new.count); nothing was changed")
        }
        let again = try interaction.readSecret(.confirmCardPIN)
        guard new.isEqual(to: again) else { throw ServiceError.policyViolation(.mismatch) }
        return new
    }

    /// `tokenpin token change-pin`: the card PIN (OpenPGP PW1, the PIV PIN), changed on the card after showing
    /// its tries left. Prompts: card PIN, new card PIN, new card PIN again.
    public func changeCardPIN(_ interaction: some Interaction) throws(ServiceError) {
        try guarded { () throws -> Void in
            let card = try managedCard(interaction, command: "change-pin")
            defer { card.close() }
            let tries = card.pinTriesLeft
            guard tries > 0 else { throw ServiceError.cardRefused(failure(.blocked, card: card.label).reason) }
            if try changeCardPINOnKeypad(card, interaction) { return }
            let current = try readCardPIN(card, interaction)
            let new = try readNewCardPIN(interaction, maximum: card.pinMaxLength)
            do throws(TokenCardError) {
                try card.changePIN(current: current, new: new)
            } catch {
                throw ServiceError.cardRefused(failure(error, card: card.label).reason)
            }
            logger.info("card PIN changed", [("card", card.label)])
        }
    }

    /// `tokenpin token unblock`: a new card PIN with the card's unblocking credential: the OpenPGP Reset Code
    /// (or its admin PIN with `admin`), the PIV PUK. Prompts: the credential, new card PIN, new card PIN again.
    public func unblockCardPIN(_ interaction: some Interaction, admin: Bool) throws(ServiceError) {
        try guarded { () throws -> Void in
            let card = try managedCard(interaction, command: "unblock")
            defer { card.close() }
            if card.kind == .pkcs11 { throw ServiceError.usage(PKCS11Token.unblockAdvice) }
            let credential = admin ? UnblockCredential.adminPIN : card.unblockCredentials.first
            guard let credential, card.unblockCredentials.contains(credential) else {
                throw ServiceError.usage(
                    "card \(card.label) (\(card.kind.displayName)) has no admin PIN to unblock with; "
                        + "run `tokenpin token unblock` without --admin")
            }
            let tries = card.triesLeft(credential)
            // nil: the card cannot tell without spending a try (a PIV card's PUK outside YubiKey metadata).
            guard tries != 0 else { throw ServiceError.cardRefused(blockedCredential(credential, card: card)) }
            if try unblockCardPINOnKeypad(card, with: credential, triesLeft: tries, interaction) { return }
            let secret = try interaction.readSecret(unblockPrompt(credential, card: card, triesLeft: tries))
            let new = try readNewCardPIN(interaction, maximum: card.pinMaxLength)
            do throws(TokenCardError) {
                try card.unblock(with: credential, secret: secret, newPIN: new)
            } catch {
                throw ServiceError.cardRefused(
                    failure(error, card: card.label).reason.replacing("card PIN", with: credential.name))
            }
            logger.info("card PIN unblocked", [("card", card.label), ("with", credential.name)])
        }
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

/// Carries the PIN's key from a counted attempt's key derivation to its success handler, so a re-seal needs no
/// second Argon2id run. The key is wiped when taken and dropped, or with the holder.
final class KeyHolder {
    var key: SecretBytes?
}

// MARK: Finding a card by serial

extension CardReaders {
    /// The reader holding the card whose token application has `serial` as its identity, or nil.
    ///
    /// Reads only public data (the application's SELECT and what it reads at open) and sends no PIN; the
    /// daemon uses it to tell whether the card a user verified with came back within `lock-grace`.
    public func reader(holding serial: String) -> String? {
        reader(holding: serial, proof: nil)
    }

    /// `reader(holding:)` for a binding: a card that recorded a card-authentication key (PIV `9E`) must also sign a
    /// fresh challenge with it (no PIN), so a card that only claims the identity cancels no card-removal lock.
    public func reader(holding binding: TokenBinding) -> String? {
        reader(holding: binding.serial, proof: binding.cardAuthentication)
    }

    func reader(holding serial: String, proof: CardAuthenticationKey?) -> String? {
        let kind = TokenApplicationKind(identity: serial)
        guard let presences = try? list() else { return nil }
        for presence in presences where presence.cardPresent {
            guard let connection = try? open(presence.name) else { continue }
            defer { connection.close() }
            guard let token = try? openTokenApplication(kind, connection: connection, reader: presence.name),
                token.identity == serial
            else { continue }
            if let proof, (try? token.prove(proof)) == nil { continue }
            return presence.name
        }
        return nil
    }
}

extension TokenStatus {
    /// Adds what the record says of the binding: the application, the PIV slot and the key's algorithm.
    mutating func describe(_ binding: TokenBinding?) {
        guard let binding else { return }
        application = binding.applicationKind.rawValue
        slot = binding.slot
        algorithm = TokenKeyAlgorithm(bindingName: binding.algorithm)?.description ?? binding.algorithm
    }
}
