/// A module answered something no correct module answers, or could not be loaded: tests compare `code`.
package struct PKCS11ModuleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    package enum Code: String, Sendable {
        /// The module could not be loaded or initialized (no file, no `C_GetFunctionList`, `C_Initialize` failed).
        case loadFailed = "load-failed"
        /// A count past what was asked for or any real token has (slots, mechanisms, objects).
        case absurdCount = "absurd-count"
        /// A length other than the one the call defines (a derived secret, an attribute, decrypted data).
        case wrongLength = "wrong-length"
        /// An attribute that does not parse (EC parameters, a point off its curve, an RSA key of another size).
        case malformedAttribute = "malformed-attribute"
    }

    /// What was wrong.
    package var code: Code
    /// A sentence naming the call and the value.
    package var detail: String

    /// Creates an error.
    package init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    package var description: String { detail }
}

/// What went wrong with a PKCS#11 token, in the terms the token application needs: each case becomes a
/// `TokenCardError` of the service (wrong PIN, blocked, transport, malformed, unusable, refused).
///
/// No case carries a PIN or a secret.
package enum PKCS11TokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `C_Login` said `CKR_PIN_INCORRECT` or `CKR_PIN_LEN_RANGE`; the token's tries hint as read afterwards.
    case wrongPIN(PKCS11PINTries)
    /// `C_Login` (or `C_SetPIN`) said `CKR_PIN_LOCKED`, or the token's flags say the user PIN is locked.
    case pinLocked
    /// No token with a usable key (matching the URI given); the sentence says what was found instead.
    case noToken(String)
    /// More than one token or key fits and nothing chose between them: the candidates' URIs, to pick one with.
    case ambiguous([String])
    /// The key cannot be used as asked (no such private key at login, an unsupported algorithm or mechanism).
    case unusable(String)
    /// A module call failed: its return value, the C function and the module.
    case module(PKCS11Error, function: String, module: String)
    /// The module (or the helper) answered something impossible: the sentence says what.
    case malformed(String)
    /// The helper did not answer within its time and was stopped: the token (or its module) is not answering.
    case notAnswering(String)
    /// The helper could not start, crashed or ended: how, and during what.
    case helperFailed(String)
    /// The slot no longer holds the token that was listed (another serial number): it was swapped.
    case tokenChanged(String)
    /// The request itself is wrong (a URI that does not parse, a PIN for a token without login, a challenge of
    /// the wrong size); nothing was sent to the token.
    case invalidRequest(String)

    /// Whether the token (or its module, or the helper) went away or did not answer, as a pulled card does: the
    /// service's transport failure, after which it may fall back to the PIN.
    package var isTransport: Bool {
        switch self {
        case .notAnswering, .helperFailed, .tokenChanged: true
        case .module(let error, _, _): error.isTokenGone
        default: false
        }
    }

    package var description: String {
        switch self {
        case .wrongPIN(let tries):
            switch tries {
            case .finalTry: "wrong token PIN; the next wrong PIN locks it (last try)"
            case .locked: "wrong token PIN; the token PIN is now locked"
            case .low, .unknown: "wrong token PIN"
            }
        case .pinLocked: "the token's PIN is locked; unlock it with the token's own tools (its SO PIN)"
        case .noToken(let why): why
        case .ambiguous(let uris):
            "more than one PKCS#11 key fits; choose one with its URI:\n"
                + uris.map { "  " + $0 }.joined(separator: "\n")
        case .unusable(let why): why
        case .module(let error, let function, let module): "\(function) failed in \(module): \(error)"
        case .malformed(let why): "the PKCS#11 module answered something impossible: \(why)"
        case .notAnswering(let why): why
        case .helperFailed(let why): why
        case .tokenChanged(let why): why
        case .invalidRequest(let why): why
        }
    }
}
