import FoundationEssentials
internal import TokenpinCore

/// Card identities a site refuses, from `/etc/tokenpin/revoked.d/*`: a lost badge, stopped on every workstation by
/// the site's configuration management without touching a record. No PIN is sent to a revoked card, none is bound,
/// and `status` says so.
///
/// One identity a line, `#` starts a comment: an OpenPGP card as `readers` shows it (12 hex digits, colons and
/// blanks allowed: `FFFE:0000AAAA`; 8 hex digits alone revoke that serial of every manufacturer), or a PIV identity
/// (`piv-guid:…`, `piv-serial:…`, `piv-key:…`).
package struct RevokedCards: Sendable, Equatable {
    /// One revoked identity and where it was listed.
    package struct Entry: Sendable, Equatable {
        /// The identity, normalised: 12 or 8 upper-case hex digits, or a lower-case PIV identity.
        package var identity: String
        /// The file that lists it.
        package var file: String
        /// The 1-based line.
        package var line: Int

        /// `FILE:LINE`, for messages.
        package var source: String { "\(file):\(line)" }
    }

    /// Every identity listed.
    package var entries: [Entry]

    /// A list; empty by default (nothing revoked).
    package init(entries: [Entry] = []) { self.entries = entries }

    /// The site's directory of revocation lists.
    package static let defaultDirectory = "/etc/tokenpin/revoked.d"

    /// The entries of `text` (`file` names it in messages), and a sentence for each line that is not an identity
    /// (such a line revokes nothing; the rest of the file still counts).
    package static func parse(text: String, file: String) -> (entries: [Entry], problems: [String]) {
        var entries: [Entry] = []
        var problems: [String] = []
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            var line = Substring(raw)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let trimmed = line.trimmingBlanks()
            if trimmed.isEmpty { continue }
            guard let identity = CardIdentity.normalise(trimmed) else {
                problems.append("\(file):\(index + 1): `\(trimmed.prefix(80))` is not a card identity")
                continue
            }
            entries.append(Entry(identity: identity, file: file, line: index + 1))
        }
        return (entries, problems)
    }

    /// Reads every file in `directory` (not those whose name starts with a dot), in name order; a directory that
    /// does not exist revokes nothing. The problems name each file or line that could not be read.
    package static func load(directory: String = defaultDirectory) -> (list: RevokedCards, problems: [String]) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            return (RevokedCards(), [])
        }
        var list = RevokedCards()
        var problems: [String] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            let path = directory + "/" + name
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
            else {
                problems.append("\(path): cannot read the file")
                continue
            }
            let parsed = parse(text: text, file: path)
            list.entries += parsed.entries
            problems += parsed.problems
        }
        return (list, problems)
    }

    /// The entry that revokes the card with `identity` (as a binding records it), or nil.
    package func entry(for identity: String) -> Entry? {
        guard let wanted = CardIdentity.normalise(identity) else { return nil }
        return entries.first { entry in
            entry.identity == wanted
                || (entry.identity.count == 8 && wanted.count == 12 && wanted.hasSuffix(entry.identity))
        }
    }

    /// Why a card is refused, for messages: names the card and the list that revokes it.
    package func reason(for identity: String) -> String? {
        guard let entry = entry(for: identity) else { return nil }
        return "card \(cardLabel(serial: identity)) is revoked by this site (\(entry.source)); no PIN is sent to it"
    }
}

/// A card's identity as `readers` shows it and `--serial` and `revoked.d` name it.
package enum CardIdentity {
    /// The identity in its one spelling (12 or 8 upper-case hex digits for OpenPGP, colons and blanks dropped; a
    /// PIV identity in lower case: `piv-guid:` and 32 hex digits, `piv-serial:` and a decimal serial, `piv-key:`
    /// and 16 hex digits), or nil when `text` is none.
    package static func normalise(_ text: some StringProtocol) -> String? {
        let lowered = text.lowercased()
        // Plain calls, not a table of key paths: that table's generic set-up cost about 220,000 instructions in
        // every verify, which checks the enrolled card against the revocation list.
        func piv(_ prefix: String, _ lengths: ClosedRange<Int>, hex: Bool) -> String?? {
            guard lowered.hasPrefix(prefix) else { return .none }
            let rest = lowered.dropFirst(prefix.count)
            let valid = rest.allSatisfy { $0.isASCII && (hex ? $0.isHexDigit : $0.isWholeNumber) }
            return .some(lengths.contains(rest.count) && valid ? lowered : nil)
        }
        if let form = piv("piv-guid:", 32...32, hex: true) ?? piv("piv-serial:", 1...10, hex: false)
            ?? piv("piv-key:", 16...16, hex: true)
        {
            return form
        }
        let digits = String(text.filter { $0 != ":" && $0 != " " && $0 != "\t" }).uppercased()
        guard [8, 12].contains(digits.count), digits.allSatisfy({ $0.isHexDigit }) else { return nil }
        return digits
    }
}
