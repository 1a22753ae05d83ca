import TokenpinCardCrypto

/// Where the PKCS#11 modules come from.
package enum PKCS11ModuleSource: Sendable, Equatable, CustomStringConvertible {
    /// Every module p11-kit is configured to load (`/etc/pkcs11/modules`, `/usr/share/p11-kit/modules`, the user's
    /// `~/.config/pkcs11/modules`), as systemd-cryptenroll and sssd load them.
    case p11kit
    /// One module by the path of its shared object (which may be `p11-kit-proxy.so`).
    case path(String)

    package var description: String {
        switch self {
        case .p11kit: "the modules p11-kit is configured to load"
        case .path(let path): path
        }
    }
}

/// The token flags tokenpin reads (`CK_TOKEN_INFO.flags`, PKCS#11 2.40 §3.2).
package struct PKCS11TokenFlags: OptionSet, Sendable, Hashable {
    package let rawValue: UInt
    package init(rawValue: UInt) { self.rawValue = rawValue }

    /// `CKF_RNG`: the token has a random number generator.
    package static let randomNumberGenerator = PKCS11TokenFlags(rawValue: 0x1)
    /// `CKF_WRITE_PROTECTED`.
    package static let writeProtected = PKCS11TokenFlags(rawValue: 0x2)
    /// `CKF_LOGIN_REQUIRED`: some operations need the user logged in.
    package static let loginRequired = PKCS11TokenFlags(rawValue: 0x4)
    /// `CKF_USER_PIN_INITIALIZED`: the user PIN is set.
    package static let userPINInitialized = PKCS11TokenFlags(rawValue: 0x8)
    /// `CKF_PROTECTED_AUTHENTICATION_PATH`: the PIN is entered on the reader's keypad (or another path the module
    /// owns); `C_Login` takes no PIN.
    package static let protectedAuthenticationPath = PKCS11TokenFlags(rawValue: 0x100)
    /// `CKF_TOKEN_INITIALIZED`.
    package static let tokenInitialized = PKCS11TokenFlags(rawValue: 0x400)
    /// `CKF_USER_PIN_COUNT_LOW`: a wrong user PIN was entered since the last right one.
    package static let userPINCountLow = PKCS11TokenFlags(rawValue: 0x1_0000)
    /// `CKF_USER_PIN_FINAL_TRY`: one more wrong user PIN locks it.
    package static let userPINFinalTry = PKCS11TokenFlags(rawValue: 0x2_0000)
    /// `CKF_USER_PIN_LOCKED`: the user PIN is locked.
    package static let userPINLocked = PKCS11TokenFlags(rawValue: 0x4_0000)
    /// `CKF_USER_PIN_TO_BE_CHANGED`: the user PIN must be changed before use.
    package static let userPINToBeChanged = PKCS11TokenFlags(rawValue: 0x8_0000)
}

/// What a token says about its user PIN's tries: coarse, as PKCS#11 gives no count and these flags are optional.
package enum PKCS11PINTries: String, Sendable, Equatable {
    /// The token sets none of the flags: no wrong PIN since the last right one, or it does not say.
    case unknown
    /// `CKF_USER_PIN_COUNT_LOW`: wrong PINs were entered; more than one try is left.
    case low
    /// `CKF_USER_PIN_FINAL_TRY`: the next wrong PIN locks it ("last try" in the prompt).
    case finalTry = "final-try"
    /// `CKF_USER_PIN_LOCKED`.
    case locked

    /// The hint the flags give; locked wins over final try, which wins over low.
    package init(_ flags: PKCS11TokenFlags) {
        if flags.contains(.userPINLocked) {
            self = .locked
        } else if flags.contains(.userPINFinalTry) {
            self = .finalTry
        } else if flags.contains(.userPINCountLow) {
            self = .low
        } else {
            self = .unknown
        }
    }
}

/// A token as its module describes it (`CK_TOKEN_INFO`), with the slot it is in and its RFC 7512 URI.
package struct PKCS11TokenInfo: Sendable, Equatable {
    /// The module's name (p11-kit's, or the module's path).
    package var module: String
    /// The module's position in the helper's list (for requests; meaningless outside that helper).
    package var moduleIndex: Int
    /// The slot ID the token is in.
    package var slot: UInt
    /// The slot's description (the reader's name for OpenSC).
    package var slotDescription: String
    /// Whether the slot is a hardware slot (`CKF_HW_SLOT`) with a removable token (`CKF_REMOVABLE_DEVICE`).
    package var isHardware: Bool
    package var isRemovable: Bool
    /// `CK_TOKEN_INFO.label`, `manufacturerID`, `model` and `serialNumber`, without their space padding.
    package var label: String
    package var manufacturer: String
    package var model: String
    package var serial: String
    /// `CK_TOKEN_INFO.flags`.
    package var flags: PKCS11TokenFlags
    /// The PIN lengths the token takes (`ulMinPinLen`...`ulMaxPinLen`), nil when it gives none that make sense.
    package var pinLength: ClosedRange<Int>?
    /// The token's URI: `pkcs11:model=…;manufacturer=…;serial=…;token=…`.
    package var uri: String

    /// The user PIN's tries, as the flags tell them.
    package var pinTries: PKCS11PINTries { PKCS11PINTries(flags) }

    /// `SoftHSM token 'ci' (serial 3b4f…)`, for prompts and lists.
    package var displayName: String {
        let maker = model.isEmpty ? manufacturer : model
        return "\(maker.isEmpty ? "PKCS#11" : maker) token '\(label)' (serial \(serial))"
    }

    package init(
        module: String, moduleIndex: Int, slot: UInt, slotDescription: String, isHardware: Bool, isRemovable: Bool,
        label: String, manufacturer: String, model: String, serial: String, flags: PKCS11TokenFlags,
        pinLength: ClosedRange<Int>?, uri: String
    ) {
        self.module = module
        self.moduleIndex = moduleIndex
        self.slot = slot
        self.slotDescription = slotDescription
        self.isHardware = isHardware
        self.isRemovable = isRemovable
        self.label = label
        self.manufacturer = manufacturer
        self.model = model
        self.serial = serial
        self.flags = flags
        self.pinLength = pinLength
        self.uri = uri
    }
}

/// How a token's key agrees a secret with tokenpin.
package enum PKCS11KeyAlgorithm: Sendable, Equatable, CustomStringConvertible {
    /// `C_DeriveKey` with `CKM_ECDH1_DERIVE` (`CKD_NULL`) on a NIST or brainpool curve.
    case ecdh(WeierstrassCurve)
    /// `C_Decrypt` of a secret encrypted to the key with `padding`.
    case rsa(bits: Int, padding: PKCS11RSAPadding)

    /// `nistp256`, `brainpoolP256r1`, `rsa2048` (the names the other token applications use).
    package var description: String {
        switch self {
        case .ecdh(let curve):
            switch curve {
            case .nistP256: "nistp256"
            case .nistP384: "nistp384"
            case .nistP521: "nistp521"
            case .brainpoolP256r1: "brainpoolP256r1"
            case .brainpoolP384r1: "brainpoolP384r1"
            case .brainpoolP512r1: "brainpoolP512r1"
            }
        case .rsa(let bits, _): "rsa\(bits)"
        }
    }
}

/// A key's public half as tokenpin keeps it.
package enum PKCS11PublicKey: Sendable, Equatable {
    /// An uncompressed point `04 || x || y`, checked to be on the key's curve.
    case ec(point: [UInt8])
    /// An RSA modulus and public exponent, big-endian without leading zeros.
    case rsa(modulus: [UInt8], exponent: [UInt8])

    /// The bytes a binding keeps and the identity hashes: the point, or the modulus.
    package var keyBytes: [UInt8] {
        switch self {
        case .ec(let point): point
        case .rsa(let modulus, _): modulus
        }
    }
}

/// A private key on a token that can agree a secret (`CKA_DERIVE` for EC, `CKA_DECRYPT` for RSA), as the helper
/// found it, with everything a binding records: what the future `PKCS11Token` shows, binds and answers with.
package struct PKCS11Key: Sendable, Equatable {
    /// The token it is on.
    package var token: PKCS11TokenInfo
    /// `CKA_ID`: what ties the private key to its public key and certificate.
    package var id: [UInt8]
    /// `CKA_LABEL` (of the private key, or of its public key while the private key is hidden before login).
    package var label: String
    /// The key agreement it supports.
    package var algorithm: PKCS11KeyAlgorithm
    /// Its public half, read from its public key object (or the private key's public attributes).
    package var publicKey: PKCS11PublicKey
    /// Whether the private key object was seen; false when the token shows it only after login
    /// (`CKA_PRIVATE`), when its use (`CKA_DERIVE`/`CKA_DECRYPT`) is checked at login.
    package var privateKeySeen: Bool
    /// The key's URI: the token's, with `id=…;object=…;type=private`.
    package var uri: String

    package init(
        token: PKCS11TokenInfo, id: [UInt8], label: String, algorithm: PKCS11KeyAlgorithm, publicKey: PKCS11PublicKey,
        privateKeySeen: Bool, uri: String
    ) {
        self.token = token
        self.id = id
        self.label = label
        self.algorithm = algorithm
        self.publicKey = publicKey
        self.privateKeySeen = privateKeySeen
        self.uri = uri
    }

    /// The SHA-256 of the public key as a binding keeps it (the point, or the modulus).
    package var publicKeyHash: [UInt8] { (try? PublicDigest.sha256(publicKey.keyBytes)) ?? [] }

    /// The identity a binding records: `pkcs11-key:` and the first 16 hex digits of `publicKeyHash`, so that
    /// another key under the same `CKA_ID` (a token re-initialized) is another token.
    package var identity: String {
        "pkcs11-key:"
            + publicKeyHash.prefix(8).map { byte in
                let hex = String(byte, radix: 16)
                return byte < 0x10 ? "0" + hex : hex
            }.joined()
    }

    /// `CKA_ID` in lower-case hex.
    package var idHex: String {
        id.map { byte in byte < 0x10 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
    }

    /// `nistp256 key 'ec256' (id 01) on SoftHSM token 'ci' (serial …)`.
    package var displayName: String {
        let name = label.isEmpty ? "" : " '\(label)'"
        return "\(algorithm) key\(name) (id \(idHex)) on \(token.displayName)"
    }
}

/// One token the helper found, its usable keys, and why its other keys cannot be used.
package struct PKCS11TokenListing: Sendable, Equatable {
    /// The token.
    package var token: PKCS11TokenInfo
    /// Keys that agree secrets, as tokenpin uses them.
    package var keys: [PKCS11Key]
    /// For the `keys`, in the same order: whether the URI of the listing request matches the key (all true when
    /// the request named none), a hidden private key's label taken to be its public key's.
    package var matches: [Bool]
    /// The same, with no label for a private key hidden until login: what a URI naming its real label (as p11tool
    /// shows it after login) matches.
    package var looseMatches: [Bool]
    /// Keys left out, each with why (`RSA 1024 key 'old' (id 02): modulus below 2048 bits`).
    package var unusable: [String]

    package init(
        token: PKCS11TokenInfo, keys: [PKCS11Key], matches: [Bool], looseMatches: [Bool]? = nil, unusable: [String]
    ) {
        self.token = token
        self.keys = keys
        self.matches = matches
        self.looseMatches = looseMatches ?? matches
        self.unusable = unusable
    }
}

/// Everything a listing found: the tokens with their keys, and what could not be read.
package struct PKCS11Inventory: Sendable, Equatable {
    /// The tokens present, with their usable keys.
    package var listings: [PKCS11TokenListing]
    /// Modules, slots or tokens that could not be read, each a sentence (they are skipped, as systemd does).
    package var problems: [String]

    package init(listings: [PKCS11TokenListing] = [], problems: [String] = []) {
        self.listings = listings
        self.problems = problems
    }

    /// Every usable key with whether the listing's URI matched it.
    package var keys: [(key: PKCS11Key, matches: Bool)] {
        listings.flatMap { listing in zip(listing.keys, listing.matches).map { ($0, $1) } }
    }

    /// Every usable key the listing's URI matched with hidden private keys' labels left out.
    var looselyMatchedKeys: [PKCS11Key] {
        listings.flatMap { listing in zip(listing.keys, listing.looseMatches).filter(\.1).map(\.0) }
    }
}
