package import TokenpinAPDU
package import TokenpinCore

/// Where cards come from: the PC/SC readers, or the in-process simulator.
///
/// The service knows cards only through this protocol, so it compiles and is tested without pcsc-lite.
package protocol CardReaders: Sendable {
    /// The readers and whether each holds a card.
    ///
    /// Throws `.serviceUnavailable` when the smart-card service is not running.
    func list() throws(ServiceError) -> [ReaderPresence]
    /// Connects to the card in `reader` for one operation; closing the connection drops any PIN verified on it.
    func open(_ reader: String) throws(ServiceError) -> any CardConnection
    /// The same readers with these deadlines on every wait (`card-timeout`); readers without waits of their own
    /// (in process) return themselves.
    func withTimeouts(_ timeouts: CardTimeouts) -> any CardReaders
    /// The keypad of `reader` for card PINs (PC/SC part 10), nil when it has none or does not say.
    func pinpad(of reader: String) -> ReaderPinpad?
}

extension CardReaders {
    package func withTimeouts(_ timeouts: CardTimeouts) -> any CardReaders { self }

    /// The reader's keypad; readers that cannot have one (in process) have none.
    package func pinpad(of reader: String) -> ReaderPinpad? { nil }

    /// The same readers with the deadlines `configuration` sets (`card-timeout`).
    package func withTimeouts(of configuration: Configuration) -> any CardReaders {
        withTimeouts(CardTimeouts(seconds: configuration.cardTimeoutSeconds))
    }
}

/// What tokenpind knows of cards beyond one user's record, for a user who is not root (`CardScope.boundCardOnly`).
///
/// Through the daemon a user touches only the card bound to their own record, or, to bind, a card no other record
/// binds, and only when `card-bind` lets them (by default: they own the active local session).
package protocol CardAccess: Sendable {
    /// The identities of the cards bound to records other than `user`'s.
    func identities(boundToOthersThan user: String) -> Set<String>
    /// Why `user` may not bind a card no record binds (`card-bind`), or nil when they may.
    func bindRefusal(for user: String) -> String?
    /// Reserves the card with `identity` for `user`'s binding until `user`'s operation ends; false when another
    /// user's operation holds it.
    func claim(_ identity: String, for user: String) -> Bool
}

/// A reader's name and whether a card is in it.
package struct ReaderPresence: Sendable, Equatable {
    /// The reader's name.
    package var name: String
    /// Whether a card is present.
    package var cardPresent: Bool

    /// Creates a presence record.
    package init(name: String, cardPresent: Bool) {
        self.name = name
        self.cardPresent = cardPresent
    }
}

/// What tokenpin found in one reader: the token application it opened there, or why none.
struct CardProbe {
    var reader: String
    /// The application found, nil when none was (see `problem`).
    var kind: TokenApplicationKind?
    /// The card's identity as a binding records it.
    var serial: String?
    /// The card as prompts show it, or the reader's name when no application was found.
    var label: String
    var pinTriesLeft: Int?
    /// Why tokenpin cannot bind to the card as it is (no key, an unsupported algorithm), named.
    var unusableReason: String?
    /// The key a binding would use as the card is (`rsa2048`, `nistp256 in 9d`).
    var keyDescription: String?
    /// Why no application could be read (no card, not a token card, a transport failure).
    var problem: String?

    /// What `token` read at open.
    init(_ token: any TokenApplication) {
        reader = token.reader
        kind = token.kind
        serial = token.identity
        label = token.label
        pinTriesLeft = token.pinTriesLeft
        unusableReason = token.unusableReason
        keyDescription = token.keyDescription
    }

    /// A reader where no token application was found.
    init(reader: String, problem: String) {
        self.reader = reader
        self.label = reader
        self.problem = problem
    }

    var usable: Bool { kind != nil && unusableReason == nil }

    var info: ReaderInfo {
        ReaderInfo(
            name: reader, cardPresent: true, serial: serial, isOpenPGP: kind == .openpgp,
            application: kind?.rawValue, usable: usable, unusableReason: unusableReason ?? problem,
            cardPINTriesLeft: pinTriesLeft == cardTriesUntold ? nil : pinTriesLeft, key: keyDescription)
    }
}

/// Labels a card for the person: `0006:12345678`.
package func cardLabel(serial: String) -> String {
    serial.count == 12 ? String(serial.prefix(4)) + ":" + String(serial.dropFirst(4)) : serial
}

/// Whether `name` matches a `reader` setting: exactly, or as a shell glob (`*`, `?`).
package func readerMatches(_ name: String, pattern: String) -> Bool {
    if name == pattern { return true }
    let n = Array(name)
    let p = Array(pattern)
    var memo: [Int: Bool] = [:]
    func match(_ i: Int, _ j: Int) -> Bool {
        let key = i * (p.count + 1) + j
        if let known = memo[key] { return known }
        var result: Bool
        if j == p.count {
            result = i == n.count
        } else if p[j] == "*" {
            result = match(i, j + 1) || (i < n.count && match(i + 1, j))
        } else {
            result = i < n.count && (p[j] == "?" || p[j] == n[i]) && match(i + 1, j + 1)
        }
        memo[key] = result
        return result
    }
    return match(0, 0)
}
