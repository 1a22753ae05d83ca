import FoundationEssentials
internal import TokenpinAPDU
package import TokenpinCore

// The card locator: which readers and cards an operation may reach (selection, scope), the card to bind or
// manage, and the enrolled card, recognised by what it reads and proves before any PIN is sent to it.

/// Which card to use when several are present (`--reader`, `--serial`, the `reader` setting).
package struct CardSelection: Sendable, Equatable {
    /// A reader name or glob.
    package var reader: String?
    /// A card serial: the 8 hex digits of the serial number, or the 12 with the manufacturer.
    package var serial: String?
    /// The token application to bind through (`--app`); nil: OpenPGP where the card has it, else PIV.
    package var application: TokenApplicationKind?
    /// The RFC 7512 URI of the PKCS#11 key to use (`--token-uri`); nil: the only usable one.
    package var tokenURI: String?

    /// Creates a selection.
    package init(
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
package enum CardScope: Sendable, Equatable {
    /// Every card the selection allows: local mode, and root through the daemon.
    case any
    /// Only the card bound to the user's record, recognised by the serial read from the card before any PIN
    /// is sent: `readers` and `status` show only that card, the card-PIN commands manage only that card, and
    /// with no binding they manage none.
    case boundCardOnly
}

extension PINService {
    /// The card source with the configuration's deadlines (`card-timeout`), or the error that says there is none.
    func readers() throws(ServiceError) -> any CardReaders {
        guard let cards else { throw .tokenUnavailable("this tokenpin has no card readers configured") }
        return cards.withTimeouts(of: configuration)
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
        let presences = try readerPresences()
        // The card was pulled from the reader it was bound in: that reader failed for want of a card.
        if !presences.contains(where: { $0.name == lastReader && $0.cardPresent }) { problems.removeAll() }
        let candidates = presences.filter {
            $0.cardPresent && selection.accepts(reader: $0.name) && $0.name != lastReader
        }
        if presences.isEmpty { throw TokenFailure(kind: .unavailable, reason: "no card reader is connected") }
        for reader in candidates {
            if let card = open(reader.name) { return card }
        }
        throw cardNotFound(serial, impostor: impostor, problems: problems, presences: presences)
    }

    /// The readers and whether each holds a card, as a token failure when they cannot be listed.
    func readerPresences() throws(TokenFailure) -> [ReaderPresence] {
        do {
            return try readers().list()
        } catch {
            if case .serviceUnavailable(let why) = error { throw TokenFailure(kind: .service, reason: why) }
            throw TokenFailure(kind: .unavailable, reason: error.message)
        }
    }

    /// Why the bound card with `serial` was found in no reader: a card that claimed its identity without proving
    /// it, the smart-card service, a card another program holds, readers that did not answer, or no such card.
    func cardNotFound(
        _ serial: String, impostor: String?, problems: [TokenFailure], presences: [ReaderPresence]
    ) -> TokenFailure {
        if let impostor {
            return TokenFailure(
                kind: .unavailable,
                reason: "the card in \(impostor) claims to be card \(cardLabel(serial: serial)) but does not prove it "
                    + "(its card-authentication key did not sign tokenpin's challenge); no PIN was sent to it")
        }
        if let service = problems.first(where: { $0.kind == .service }) { return service }
        if let held = problems.first(where: \.heldElsewhere) {
            return TokenFailure(
                kind: .unavailable, reason: "card \(cardLabel(serial: serial)) could not be looked for: " + held.reason)
        }
        if !problems.isEmpty {
            return TokenFailure(
                kind: .unavailable,
                reason: "card \(cardLabel(serial: serial)) is not in any reader that answered ("
                    + problems.map(\.reason).joined(separator: "; ") + ")")
        }
        let othersPresent = presences.contains { $0.cardPresent && selection.accepts(reader: $0.name) }
        return TokenFailure(
            kind: .unavailable,
            reason: "card \(cardLabel(serial: serial)) is not in any reader"
                + (othersPresent ? " (other cards are)" : " (no card present)"))
    }

    /// Under `.boundCardOnly`, the probes of cards this user may touch: their own bound card, or when they may
    /// bind (`card-bind`) and have no binding, the cards no other record binds. Also how many were hidden.
    func touchable(_ probes: [CardProbe]) throws(ServiceError) -> (visible: [CardProbe], hidden: Int) {
        guard cardScope == .boundCardOnly else { return (probes, 0) }
        let own = try boundCard()?.serial
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

}

extension PINService {
    /// Every reader the selection allows and the card in it; under `.boundCardOnly` only the reader holding
    /// the card bound to the record (none without a binding, and then no card is read at all).
    package func listReaders() throws(ServiceError) -> [ReaderInfo] {
        guard cardScope == .boundCardOnly else {
            return try withPinpads(
                probeCards().map { probe in
                    probe.kind == nil && probe.problem == "no card"
                        ? ReaderInfo(name: probe.reader, cardPresent: false) : probe.info
                })
        }
        let bound = try boundCard()?.serial
        let mayBind = bound == nil ? try mayBindFreeCard() : false
        // No card is read at all for a user who may touch none.
        guard bound != nil || mayBind else { return [] }
        return try withPinpads(touchable(try probeCards()).visible.map(\.info))
    }

    /// Whether this user, through the daemon, may bind a card no other record binds: enrolled, and `card-bind`
    /// lets them.
    func mayBindFreeCard() throws(ServiceError) -> Bool {
        guard let cardAccess else { return false }
        let enrolled: Bool
        do throws(StoreError) {
            enrolled = try store.exists() ? try store.load(user: user) != nil : false
        } catch {
            throw .store(error)
        }
        return enrolled && cardAccess.bindRefusal(for: user) == nil
    }

    /// The card bound to the record (token or composite slot), or nil when there is no record or no binding.
    func boundCard() throws(ServiceError) -> TokenBinding? {
        do throws(StoreError) {
            guard try store.exists(), let record = try store.load(user: user) else { return nil }
            return record.slot(.token)?.token ?? record.slot(.composite)?.token
        } catch {
            throw .store(error)
        }
    }

    /// What the token side looks like for `status` and `types`; problems (pcscd down) are reported, not thrown.
    package func tokenStatus(binding: TokenBinding?) -> TokenStatus {
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

}

// MARK: Finding a card by serial

extension CardReaders {
    /// The reader holding the card whose token application has `serial` as its identity, or nil.
    ///
    /// Reads only public data (the application's SELECT and what it reads at open) and sends no PIN; the
    /// daemon uses it to tell whether the card a user verified with came back within `lock-grace`.
    package func reader(holding serial: String) -> String? {
        reader(holding: serial, proof: nil)
    }

    /// `reader(holding:)` for a binding: a card that recorded a card-authentication key (PIV `9E`) must also sign a
    /// fresh challenge with it (no PIN), so a card that only claims the identity cancels no card-removal lock.
    package func reader(holding binding: TokenBinding) -> String? {
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
