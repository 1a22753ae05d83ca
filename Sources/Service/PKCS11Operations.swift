internal import TokenpinCore
import TokenpinPKCS11

/// How the service finds PKCS#11 tokens: through a `tokenpin-pkcs11` helper with the modules `pkcs11` names, the
/// key's URI standing where a card's reader stands for the other applications.
extension PINService {
    /// Opens the key `uri` selects (the only usable key without one) in a new helper.
    func openPKCS11Token(uri: String?) throws(TokenFailure) -> PKCS11Token {
        do {
            return try PKCS11Token.open(uri: uri ?? selection.tokenURI, access: pkcs11)
        } catch {
            throw pkcs11Failure(error, uri: uri ?? selection.tokenURI)
        }
    }

    /// A PKCS#11 failure in the service's terms; a missing or ambiguous key names what was found.
    func pkcs11Failure(_ error: PKCS11TokenError, uri: String?) -> TokenFailure {
        switch error {
        case .noToken(let why), .invalidRequest(let why):
            return TokenFailure(kind: .unavailable, reason: why)
        case .ambiguous:
            return TokenFailure(kind: .unavailable, reason: error.description)
        default:
            return failure(PKCS11Token.cardError(error), card: uri ?? "PKCS#11 token")
        }
    }

    /// Every PKCS#11 key the selection's URI matches, as probes named by their URIs; tokens without a usable key
    /// (and modules that could not be read) as probes with the reason.
    func probePKCS11Tokens(_ selection: CardSelection) throws(ServiceError) -> [CardProbe] {
        let helper: PKCS11Helper
        let inventory: PKCS11Inventory
        do {
            helper = try PKCS11Helper.start(
                module: pkcs11.source, timeout: pkcs11.timeoutMilliseconds, executable: pkcs11.helper,
                environment: pkcs11.environment, counter: pkcs11.counter)
            defer { helper.stop() }
            inventory = try helper.inventory(uri: selection.tokenURI)
        } catch {
            throw .tokenUnavailable(error.description)
        }
        var probes: [CardProbe] = []
        for listing in inventory.listings {
            let matching = zip(listing.keys, listing.matches).filter(\.1).map(\.0)
            for key in matching {
                var probe = CardProbe(reader: key.uri, problem: "")
                probe.problem = nil
                probe.kind = .pkcs11
                probe.serial = key.identity
                probe.label = key.displayName
                probe.pinTriesLeft = PKCS11Token.tries(key.token.pinTries)
                probe.keyDescription = "\(key.algorithm) (id \(key.idHex))"
                if let revoked = revokedCards.entry(for: key.identity) {
                    probe.unusableReason = "revoked by this site (\(revoked.source))"
                }
                probes.append(probe)
            }
            if listing.keys.isEmpty && selection.tokenURI == nil {
                let why = (["no key that agrees a secret (CKA_DERIVE EC or CKA_DECRYPT RSA)"] + listing.unusable)
                probes.append(CardProbe(reader: listing.token.uri, problem: why.joined(separator: "; ")))
            }
        }
        return probes
    }

    /// More than one PKCS#11 key fits: refused with their URIs, as systemd-cryptenroll refuses.
    func pkcs11Ambiguity(_ probes: [CardProbe]) -> ServiceError {
        .usage(
            "more than one PKCS#11 key fits; choose one with --token-uri:\n"
                + probes.map { "  \($0.reader)  (\($0.label))" }.joined(separator: "\n"))
    }

    /// The bound PKCS#11 key, found by the URI the binding stored and recognised by its public key: another key
    /// there (a token re-initialized) gets no PIN.
    func openEnrolledPKCS11Token(_ binding: TokenBinding) throws(TokenFailure) -> any TokenApplication {
        guard let uri = binding.uri else {
            throw TokenFailure(kind: .unavailable, reason: "the PKCS#11 binding has no URI; enable the token again")
        }
        let token: PKCS11Token
        do {
            token = try PKCS11Token.open(uri: uri, access: pkcs11)
        } catch {
            var failure = pkcs11Failure(error, uri: uri)
            if case .noToken = error {
                failure.reason = "the bound PKCS#11 key \(uri) is not present (\(failure.reason))"
            }
            throw failure
        }
        guard token.identity == binding.serial else {
            let found = token.label
            token.close()
            throw TokenFailure(
                kind: .unavailable,
                reason: "the PKCS#11 key at \(uri) is not the bound key (\(found) has another public key); "
                    + "no PIN was sent to it")
        }
        return token
    }

    /// The card PIN for `card`, asked with its tries left. A PKCS#11 token with a protected authentication path
    /// (`CKF_PROTECTED_AUTHENTICATION_PATH`: the reader's or the token's own keypad) is asked nothing at the keyboard:
    /// the person is told where to type (`keypadEntry`, an information message through tokenpind and PAM, never a
    /// secret prompt), and the helper's `C_Login` takes no PIN.
    func readCardPIN(_ card: any TokenApplication, _ interaction: some Interaction) throws(ServiceError) -> SecretBytes
    {
        if let token = card as? PKCS11Token, token.usesKeypad {
            logger.info("token PIN on the reader's keypad", [("card", card.label)])
            interaction.report(
                .keypadEntry(reader: token.keypadName, card: card.promptName, triesLeft: card.pinTriesLeft))
            return SecretBytes(count: 0)
        }
        return try interaction.readSecret(.cardPIN(card: card.promptName, triesLeft: card.pinTriesLeft))
    }
}
