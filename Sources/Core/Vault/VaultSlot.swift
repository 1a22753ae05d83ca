import FoundationEssentials

/// What unlocks a key slot.
public enum SlotKind: String, Codable, Sendable, CaseIterable {
    /// The PIN, through Argon2id.
    case pin
    /// The recovery key shown once at enrolment, through keyed BLAKE2b.
    case recovery
    /// A card: its cv25519 key agrees a secret with the slot's ephemeral key (see `TokenBinding`).
    case token
    /// The PIN and a card together (`mode = both`).
    case composite
}

/// Which card a token or composite slot is bound to, and the public half of the key agreement.
public struct TokenBinding: Codable, Sendable, Equatable {
    /// The card's identity. OpenPGP: its serial number as printed by `gpg --card-status` (manufacturer and
    /// serial, hex). PIV: `piv-guid:<32 hex>` (the CHUID's GUID), else `piv-serial:<decimal>` (a YubiKey's
    /// serial), else `piv-key:<16 hex>` (the start of the SHA-256 of the bound public key).
    public var serial: String
    /// The card's decryption public key: 32 raw bytes for cv25519, the uncompressed point `04 || x || y` for
    /// the NIST and brainpool curves, the modulus n for RSA.
    public var cardPublicKey: Data
    /// What the card is asked to decipher: the ephemeral public key (32 raw bytes for cv25519, an
    /// uncompressed point for the other curves; its secret half was discarded), or for RSA the PKCS#1 v1.5
    /// cryptogram of the slot's secret (as long as the modulus).
    public var ephemeralPublicKey: Data
    /// The reader the card was in when bound (informational).
    public var reader: String?
    /// The decryption key's algorithm (`rsa2048`, `nistp256`, ...); absent for cv25519, the only algorithm of
    /// records made before there were others, so those stay byte for byte what they were.
    public var algorithm: String?
    /// RSA only: the card's public exponent e.
    public var cardPublicExponent: Data?
    /// The card application holding the key (`piv`); absent for OpenPGP, the only application of records made
    /// before there were others, so those stay byte for byte what they were.
    public var application: String?
    /// PIV only: the key's slot, two lower-case hex digits (`9d`, `82`...).
    public var slot: String?
    /// PIV only: the card-authentication key (`9E`) the card held when it was bound. A verification has the card
    /// sign a fresh challenge with it (no PIN) before any card PIN is sent, so a card that only claims the bound
    /// identity gets no PIN. Absent when the card had none, and for OpenPGP, whose cards cannot prove themselves
    /// without a PIN.
    public var cardAuthentication: CardAuthenticationKey?
    /// PKCS#11 only: the RFC 7512 URI of the bound key (`pkcs11:token=…;id=%01;type=private`), by which it is found
    /// again among the tokens present; the identity (the hash of the public key) says whether it is the bound one.
    public var uri: String?
    /// PKCS#11 RSA keys only: `oaep-sha1` when the challenge is encrypted with RSA-OAEP (SHA-1, MGF1-SHA-1), the padding
    /// the token was found to take; absent for PKCS#1 v1.5, as the OpenPGP and PIV applications use.
    public var rsaPadding: String?

    /// Creates a binding.
    public init(
        serial: String, cardPublicKey: Data, ephemeralPublicKey: Data, reader: String? = nil,
        algorithm: String? = nil, cardPublicExponent: Data? = nil, application: String? = nil, slot: String? = nil
    ) {
        self.serial = serial
        self.cardPublicKey = cardPublicKey
        self.ephemeralPublicKey = ephemeralPublicKey
        self.reader = reader
        self.algorithm = algorithm
        self.cardPublicExponent = cardPublicExponent
        self.application = application
        self.slot = slot
    }

    /// The applications a binding may name; OpenPGP is the binding without one.
    public static let applications: Set<String> = ["piv", "pkcs11"]
    /// The algorithms a PKCS#11 key may have for a binding.
    public static let pkcs11Algorithms: Set<String> = [
        "nistp256", "nistp384", "nistp521", "brainpoolP256r1", "brainpoolP384r1", "brainpoolP512r1",
        "rsa2048", "rsa3072", "rsa4096",
    ]
    /// The longest PKCS#11 URI accepted, in bytes.
    public static let maximumURILength = 1024
    /// The algorithms a PIV key may have for a binding.
    public static let pivAlgorithms: Set<String> = ["nistp256", "nistp384", "rsa2048"]
    /// The PIV slots a key may be bound in: `9a`, `9c`, `9d`, `9e` and the retired key management slots `82`–`95`.
    public static let pivSlots: [String] =
        ["9a", "9c", "9d", "9e"] + (0x82...0x95).map { String($0, radix: 16) }

    /// The algorithms a binding may name, with the sizes of the card's key and of the ephemeral key (or
    /// cryptogram) in bytes. cv25519 is the binding without a name.
    public static let algorithmSizes: [String: (cardKey: Int, ephemeral: Int)] = [
        "nistp256": (65, 65), "nistp384": (97, 97), "nistp521": (133, 133),
        "brainpoolP256r1": (65, 65), "brainpoolP384r1": (97, 97), "brainpoolP512r1": (129, 129),
        "rsa2048": (256, 256), "rsa3072": (384, 384), "rsa4096": (512, 512),
    ]

    /// The longest serial accepted, in bytes.
    public static let maximumSerialLength = 64
    /// The longest reader name accepted, in bytes.
    public static let maximumReaderLength = 256

    /// Which field is out of range, or nil; the message names the field.
    public var problem: String? {
        if let cardAuthentication {
            guard application != nil else { return "token.cardAuthentication is set for an OpenPGP key" }
            if let problem = cardAuthentication.problem { return problem }
        }
        var sizes = (cardKey: 32, ephemeral: 32)
        if let algorithm {
            guard let known = Self.algorithmSizes[algorithm] else { return "token.algorithm \(algorithm) is unknown" }
            sizes = known
        }
        guard cardPublicKey.count == sizes.cardKey else {
            return "token.cardPublicKey is \(cardPublicKey.count) bytes, not \(sizes.cardKey)"
        }
        guard ephemeralPublicKey.count == sizes.ephemeral else {
            return "token.ephemeralPublicKey is \(ephemeralPublicKey.count) bytes, not \(sizes.ephemeral)"
        }
        if algorithm?.hasPrefix("rsa") ?? false {
            guard let exponent = cardPublicExponent, (1...8).contains(exponent.count) else {
                return "token.cardPublicExponent must be 1 to 8 bytes for an RSA card key"
            }
        } else if cardPublicExponent != nil {
            return "token.cardPublicExponent is set for a key that is not RSA"
        }
        if let problem = pkcs11Problem { return problem }
        if let application, application != "pkcs11" {
            guard Self.applications.contains(application) else { return "token.application \(application) is unknown" }
            guard let slot else { return "token.slot is missing for a \(application) key" }
            guard Self.pivSlots.contains(slot) else {
                return "token.slot \(slot) is not a PIV key slot (9a, 9c, 9d, 9e, 82-95)"
            }
            guard let algorithm, Self.pivAlgorithms.contains(algorithm) else {
                return "token.algorithm \(algorithm ?? "cv25519") is not one a PIV key is bound with"
            }
        } else if slot != nil, application == nil {
            return "token.slot is set for an OpenPGP key"
        }
        guard (1...Self.maximumSerialLength).contains(serial.utf8.count) else {
            return "token.serial must be 1 to \(Self.maximumSerialLength) bytes, not \(serial.utf8.count)"
        }
        if let reader, reader.utf8.count > Self.maximumReaderLength {
            return "token.reader is longer than \(Self.maximumReaderLength) bytes"
        }
        return nil
    }

    /// What is wrong with the PKCS#11 fields (`uri`, `rsaPadding`, and the slot and card-authentication key a
    /// PKCS#11 key has none of), or nil.
    private var pkcs11Problem: String? {
        guard application == "pkcs11" else {
            if uri != nil { return "token.uri is set for a key that is not a PKCS#11 key" }
            if rsaPadding != nil { return "token.rsaPadding is set for a key that is not a PKCS#11 key" }
            return nil
        }
        guard let uri, uri.hasPrefix("pkcs11:"), (8...Self.maximumURILength).contains(uri.utf8.count) else {
            return "token.uri must be a pkcs11: URI of up to \(Self.maximumURILength) bytes for a PKCS#11 key"
        }
        if slot != nil { return "token.slot is set for a PKCS#11 key" }
        if cardAuthentication != nil { return "token.cardAuthentication is set for a PKCS#11 key" }
        guard let algorithm, Self.pkcs11Algorithms.contains(algorithm) else {
            return "token.algorithm \(algorithm ?? "cv25519") is not one a PKCS#11 key is bound with"
        }
        if let rsaPadding {
            guard rsaPadding == "oaep-sha1", algorithm.hasPrefix("rsa") else {
                return "token.rsaPadding \(rsaPadding) is not `oaep-sha1` on an RSA key"
            }
        }
        return nil
    }
}

/// A card's card-authentication key (PIV `9E`): a key that signs without a PIN, which proves the card is the one
/// bound and not one that only claims its identity.
public struct CardAuthenticationKey: Codable, Sendable, Equatable {
    /// `nistp256`, `nistp384` or `rsa2048`.
    public var algorithm: String
    /// The uncompressed point `04 || x || y`, or the RSA modulus.
    public var publicKey: Data
    /// RSA only: the public exponent.
    public var exponent: Data?

    /// Creates the key.
    public init(algorithm: String, publicKey: Data, exponent: Data? = nil) {
        self.algorithm = algorithm
        self.publicKey = publicKey
        self.exponent = exponent
    }

    /// The algorithms and their public key sizes in bytes.
    public static let sizes: [String: Int] = ["nistp256": 65, "nistp384": 97, "rsa2048": 256]

    /// Which field is out of range, or nil.
    public var problem: String? {
        guard let size = Self.sizes[algorithm] else {
            return "token.cardAuthentication.algorithm \(algorithm) is not nistp256, nistp384 or rsa2048"
        }
        guard publicKey.count == size else {
            return "token.cardAuthentication.publicKey is \(publicKey.count) bytes, not \(size)"
        }
        if algorithm.hasPrefix("rsa") {
            guard let exponent, (1...8).contains(exponent.count) else {
                return "token.cardAuthentication.exponent must be 1 to 8 bytes for an RSA key"
            }
        } else if exponent != nil {
            return "token.cardAuthentication.exponent is set for a key that is not RSA"
        }
        return nil
    }
}

/// One way to unwrap the vault key: the vault key sealed with XChaCha20-Poly1305 under a key derived from
/// the slot's secret; the slot header (kind, user, KDF parameters, binding) is the associated data, so
/// moving a slot to another user or editing its parameters makes it fail to open.
public struct VaultSlot: Codable, Sendable, Equatable {
    /// What unlocks the slot.
    public var kind: SlotKind
    /// How the key-encryption key is derived.
    public var kdf: KDFParameters
    /// The card, for `token` and `composite` slots.
    public var token: TokenBinding?
    /// The 24-byte XChaCha20 nonce.
    public var nonce: Data
    /// The vault key sealed, with its 16-byte tag.
    public var wrappedKey: Data
    /// When the slot was made.
    public var created: Date

    /// Seals `vaultKey` under `keyEncryptionKey` into a new slot for `user`.
    public static func seal(
        _ vaultKey: borrowing SecretBytes, keyEncryptionKey: borrowing SecretBytes,
        kind: SlotKind, kdf: KDFParameters, token: TokenBinding? = nil, user: String,
        created: Date
    ) throws(CryptoError) -> VaultSlot {
        let nonce = SecureRandom.bytes(XChaCha20Poly1305.nonceLength)
        var slot = VaultSlot(
            kind: kind, kdf: kdf, token: token, nonce: Data(nonce), wrappedKey: Data(), created: created)
        let sealed = try XChaCha20Poly1305.seal(
            vaultKey, key: keyEncryptionKey, nonce: nonce,
            associatedData: slot.header(user: user))
        slot.wrappedKey = Data(sealed)
        return slot
    }

    /// Opens the slot with `keyEncryptionKey`; nil when the key is wrong or the slot was altered.
    public func open(keyEncryptionKey: borrowing SecretBytes, user: String) -> SecretBytes? {
        XChaCha20Poly1305.open(
            [UInt8](wrappedKey), key: keyEncryptionKey, nonce: [UInt8](nonce),
            associatedData: header(user: user))
    }

    /// Whether sizes and parameters are what tokenpin writes; a slot that is not is refused as corrupt.
    public var isWellFormed: Bool { problem == nil }

    /// Which field is not what tokenpin writes, or nil; the message names the field as the record spells it.
    public var problem: String? {
        if let problem = kdf.problem { return problem }
        guard nonce.count == XChaCha20Poly1305.nonceLength else {
            return "nonce is \(nonce.count) bytes, not \(XChaCha20Poly1305.nonceLength)"
        }
        let sealedLength = Vault.keyLength + XChaCha20Poly1305.tagLength
        guard wrappedKey.count == sealedLength else {
            return "wrappedKey is \(wrappedKey.count) bytes, not \(sealedLength)"
        }
        switch kind {
        case .pin, .composite:
            guard kdf.algorithm == .argon2id13 else { return "kdf.algorithm must be argon2id13" }
        case .recovery, .token:
            guard kdf.algorithm == .blake2b else { return "kdf.algorithm must be blake2b" }
        }
        if kind == .token || kind == .composite {
            guard let token else { return "token is missing" }
            return token.problem
        }
        return token == nil ? nil : "token is set in a slot that has no card"
    }

    /// The associated data: a length-prefixed encoding of everything in the slot but the sealed key.
    func header(user: String) -> [UInt8] {
        var out: [UInt8] = []
        func field(_ bytes: some Collection<UInt8>) {
            let count = UInt32(clamping: bytes.count)  // fields are bounded far below 4 GiB (`problem`)
            out += [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
            out += bytes
        }
        field(Array("tokenpin/slot/v1".utf8))
        field(Array(user.utf8))
        field(Array(kind.rawValue.utf8))
        field(Array(kdf.algorithm.rawValue.utf8))
        field(Array(String(kdf.memoryKiB).utf8))
        field(Array(String(kdf.passes).utf8))
        field(kdf.salt)
        field(nonce)
        if let token {
            field(Array(token.serial.utf8))
            field(token.cardPublicKey)
            field(token.ephemeralPublicKey)
            // Only bindings that name an algorithm add fields, so cv25519 slots keep the header they were sealed with.
            if let algorithm = token.algorithm {
                field(Array(algorithm.utf8))
                field(token.cardPublicExponent ?? Data())
            }
            // Likewise only bindings that name an application: OpenPGP slots keep their header.
            if let application = token.application {
                field(Array(application.utf8))
                field(Array((token.slot ?? "").utf8))
            }
            // PKCS#11 bindings add the key's URI and the RSA padding, which choose the key and the challenge's form.
            if token.application == "pkcs11" {
                field(Array((token.uri ?? "").utf8))
                field(Array((token.rsaPadding ?? "").utf8))
            }
            // And only bindings that recorded a card-authentication key: the key a verification checks is sealed in.
            if let authentication = token.cardAuthentication {
                field(Array("card-authentication".utf8))
                field(Array(authentication.algorithm.utf8))
                field(authentication.publicKey)
                field(authentication.exponent ?? Data())
            }
        }
        return out
    }
}

/// The vault key's size and making.
public enum Vault {
    /// 32 bytes.
    public static let keyLength = 32

    /// A fresh random vault key in guarded memory.
    public static func newKey() -> SecretBytes { SecureRandom.secret(keyLength) }
}
