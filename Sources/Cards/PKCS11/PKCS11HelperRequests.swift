import TokenpinCardCrypto
import TokenpinCore

/// What tokenpin asks a helper, each request shaped, sent and its reply checked here; the helper (or the modules in
/// this process, `PKCS11Helper.inProcess`) answers it.
extension PKCS11Helper {
    /// Every token present with its usable keys, each marked whether `uri` matches it (all, with none).
    ///
    /// - Throws: `.invalidRequest` for a URI that does not parse or names a PIN; `.malformed` when a module
    ///   answered something impossible.
    package func inventory(uri: String? = nil) throws(PKCS11TokenError) -> PKCS11Inventory {
        if let uri { _ = try PKCS11URI(parsing: uri) }
        let reply = try exchange(.list(uri: uri))
        switch consume reply {
        case .inventory(let inventory, let calls):
            lastCalls = calls
            return inventory
        case .failure(let error, let calls):
            lastCalls = calls
            throw error
        default:
            throw unexpected("a listing")
        }
    }

    /// The key to use: the only usable key `uri` matches (every usable key, without a URI), as systemd-cryptenroll
    /// chooses.
    ///
    /// - Throws: `.ambiguous` with the URIs of the candidates when more than one fits; `.noToken` when none does,
    ///   saying what was found instead.
    package func selectKey(uri: String? = nil) throws(PKCS11TokenError) -> PKCS11Key {
        try Self.select(from: try inventory(uri: uri), uri: uri, source: source)
    }

    /// The one key of `inventory` that `uri` selects; see `selectKey(uri:)`.
    package static func select(from inventory: PKCS11Inventory, uri: String?, source: PKCS11ModuleSource)
        throws(PKCS11TokenError) -> PKCS11Key
    {
        var candidates = inventory.keys.filter(\.matches).map(\.key)
        // A URI naming a hidden private key's own label (p11tool's, after login) matches with that label left out.
        if candidates.isEmpty { candidates = inventory.looselyMatchedKeys }
        if candidates.count == 1 { return candidates[0] }
        if candidates.count > 1 { throw .ambiguous(candidates.map(\.uri)) }
        var found: [String] = []
        for listing in inventory.listings {
            let keys = listing.keys.isEmpty ? "no key that agrees a secret" : "\(listing.keys.count) usable key(s)"
            found.append(
                "\(listing.token.uri) (\(keys)\(listing.unusable.isEmpty ? "" : "; " + listing.unusable.joined(separator: "; ")))"
            )
        }
        found += inventory.problems
        let wanted = uri.map { "no usable PKCS#11 key matches \($0)" } ?? "no PKCS#11 token with a usable key"
        let place = " (modules: \(source))"
        throw .noToken(
            wanted + place + (found.isEmpty ? "; no token is present" : "; found: " + found.joined(separator: ", ")))
    }

    /// `key` read afresh from its token, with its public half (no login).
    package func refresh(_ key: PKCS11Key) throws(PKCS11TokenError) -> PKCS11Key {
        let reply = try exchange(.key(PKCS11KeyReference(key)))
        switch consume reply {
        case .key(let fresh, let calls):
            lastCalls = calls
            return fresh
        case .failure(let error, let calls):
            lastCalls = calls
            throw error
        default:
            throw unexpected("a key")
        }
    }

    /// The token's description and flags now: its PIN tries hint after a refusal.
    package func status(of key: PKCS11Key) throws(PKCS11TokenError) -> PKCS11TokenInfo {
        let reply = try exchange(.status(PKCS11KeyReference(key)))
        switch consume reply {
        case .token(let token, let calls):
            lastCalls = calls
            return token
        case .failure(let error, let calls):
            lastCalls = calls
            throw error
        default:
            throw unexpected("the token's status")
        }
    }

    /// Logs in with `pin` (nil on a token with a protected authentication path: its keypad asks) and has the key
    /// answer `challenge`: the ECDH secret with the point (`C_DeriveKey`), or the secret an RSA cryptogram holds
    /// (`C_Decrypt`, `expectedLength` bytes). The answer is in guarded memory; the PIN is copied only into guarded
    /// frames, which are wiped.
    ///
    /// - Throws: `.wrongPIN` with the token's tries hint, `.pinLocked`, `.malformed` for an answer of the wrong
    ///   length, `.notAnswering`/`.helperFailed` when the helper hung or crashed.
    package func answer(
        _ key: PKCS11Key, pin: borrowing SecretBytes?, challenge: [UInt8],
        expectedLength: Int = PKCS11Challenge.rsaSecretLength
    ) throws(PKCS11TokenError) -> SecretBytes {
        let reference = PKCS11KeyReference(key)
        let keypad = key.token.flags.contains(.protectedAuthenticationPath)
        let limit = keypad ? max(timeoutMilliseconds, protectedPathTimeoutMilliseconds) : timeoutMilliseconds
        let copy: SecretBytes? =
            switch pin {
            case .some(let pin): keypad ? nil : pin.duplicate()
            case .none: nil
            }
        let request: HelperRequest
        let length: Int
        switch key.algorithm {
        case .ecdh(let curve):
            guard challenge.count == curve.pointLength else {
                throw .invalidRequest("the challenge is not a \(curve.rawValue) point; nothing was sent to the token")
            }
            request = .derive(reference, curve: curve, pin: copy, peerPoint: challenge)
            length = curve.coordinateLength
        case .rsa(let bits, let padding):
            guard challenge.count == bits / 8 else {
                throw .invalidRequest("the challenge is not an RSA \(bits) cryptogram; nothing was sent to the token")
            }
            request = .decrypt(
                reference, padding: padding, pin: copy, cryptogram: challenge, expectedLength: expectedLength)
            length = expectedLength
        }
        let reply = try exchange(request, timeout: limit)
        switch consume reply {
        case .secret(let secret, let calls):
            lastCalls = calls
            guard secret.count == length else {
                throw .malformed("the helper returned a \(secret.count)-byte secret, not \(length) bytes")
            }
            return secret
        case .failure(let error, let calls):
            lastCalls = calls
            throw error
        default:
            throw unexpected("a secret")
        }
    }

    /// Changes the token's user PIN from `current` to `new` (`C_SetPIN`); on a token with a protected
    /// authentication path both are entered on its keypad and the arguments are ignored.
    package func changePIN(_ key: PKCS11Key, current: borrowing SecretBytes, new: borrowing SecretBytes)
        throws(PKCS11TokenError)
    {
        let keypad = key.token.flags.contains(.protectedAuthenticationPath)
        if !keypad, let range = key.token.pinLength, !range.contains(new.count) {
            throw .invalidRequest(
                "the token takes PINs of \(range.lowerBound) to \(range.upperBound) bytes; the new PIN has \(new.count)"
            )
        }
        let request = HelperRequest.setPIN(
            PKCS11KeyReference(key), old: keypad ? SecretBytes(count: 0) : current.duplicate(),
            new: keypad ? SecretBytes(count: 0) : new.duplicate(), keypad: keypad)
        let limit = keypad ? max(timeoutMilliseconds, protectedPathTimeoutMilliseconds) : timeoutMilliseconds
        let reply = try exchange(request, timeout: limit)
        switch consume reply {
        case .done(let calls):
            lastCalls = calls
        case .failure(let error, let calls):
            lastCalls = calls
            throw error
        default:
            throw unexpected("the PIN change's result")
        }
    }

    func unexpected(_ what: String) -> PKCS11TokenError {
        stop()
        let failure = PKCS11TokenError.malformed("the PKCS#11 helper answered something other than \(what)")
        ended = failure
        return failure
    }
}
