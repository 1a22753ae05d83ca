/// The login keyring (`login-keyring = on`): the login password kept sealed to a key that only a verification opens,
/// so that PAM can hand it to `pam_gnome_keyring` or `pam_kwallet5` after a PIN or card login.
///
/// The key pair is X25519: the secret is the application key of the reserved name `tokenpin:login-keyring`
/// (`ApplicationKeys`, so it survives `change`, `reset` and re-binding the card, and a new record makes a new one),
/// the public key its base-point multiple. Sealing needs only the public key (libsodium's `crypto_box_seal`), so
/// the password stack seals a new password without any verification; opening needs the vault key.
public enum LoginKeyring {
    /// The reserved application name whose key is the secret key; `derive` never releases it.
    public static let application = ApplicationName(reserved: "tokenpin:login-keyring")
    /// The longest password kept, in bytes (the PAM module's longest secret).
    public static let maximumPasswordLength = 1024

    /// The secret key (guarded memory) and public key of `user`'s record under `vaultKey`.
    public static func keyPair(vaultKey: borrowing SecretBytes, user: String) throws(CryptoError) -> X25519.KeyPair {
        let secret = try ApplicationKeys.key(vaultKey: vaultKey, user: user, application: application)
        return X25519.KeyPair(publicKey: try X25519.publicKey(for: secret), secretKey: secret)
    }

    /// Whether `password` can be kept: 1 to `maximumPasswordLength` bytes, no NUL (PAM items are C strings).
    public static func isKeepable(_ password: borrowing SecretBytes) -> Bool {
        password.withUnsafeBytes { bytes in
            (1...maximumPasswordLength).contains(bytes.count) && !bytes.contains(0)
        }
    }
}

/// The file beside a record that holds the login keyring's public key and, once a password was sealed, the sealed
/// password (`USER.login-keyring`, 0600 like the record).
///
/// Binary, strict: the magic `TPLK`, a version byte (1), the 32-byte public key, a 2-byte big-endian length and
/// that many bytes of sealed box (0: nothing sealed yet). Any other length, a short file, trailing bytes, or a
/// box too short to be one is an error that says what is wrong.
public struct LoginKeyringFile: Sendable, Equatable {
    /// The X25519 public key of the record's login-keyring key.
    public var publicKey: [UInt8]
    /// The sealed password, or nil when none was sealed.
    public var sealedPassword: [UInt8]?

    /// Creates the contents.
    public init(publicKey: [UInt8], sealedPassword: [UInt8]? = nil) {
        self.publicKey = publicKey
        self.sealedPassword = sealedPassword
    }

    static let magic: [UInt8] = Array("TPLK".utf8)
    /// The format version this tokenpin writes and reads.
    public static let version: UInt8 = 1
    /// The length of a file with nothing sealed.
    public static let headerLength = 4 + 1 + 32 + 2
    /// The longest sealed box kept.
    public static let maximumSealedLength = LoginKeyring.maximumPasswordLength + SealedBox.overhead
    /// The longest file.
    public static let maximumLength = headerLength + maximumSealedLength

    /// The file's bytes.
    public var encoded: [UInt8] {
        let sealed = sealedPassword ?? []
        return Self.magic + [Self.version] + publicKey + [UInt8(sealed.count >> 8), UInt8(sealed.count & 0xFF)]
            + sealed
    }

    /// Why a login-keyring file cannot be read.
    public struct FormatError: Error, Equatable, Sendable, CustomStringConvertible {
        /// What is wrong.
        public enum Code: String, Sendable {
            /// Shorter than its header or than the length it announces.
            case truncated
            /// Not a login-keyring file (another magic).
            case badMagic
            /// A version this tokenpin does not read.
            case unknownVersion
            /// Bytes after the sealed box.
            case trailingBytes
            /// A sealed box too short or too long to hold a password.
            case badLength
        }

        /// What is wrong.
        public var code: Code
        /// A human description.
        public var detail: String

        public var description: String { detail }
    }

    /// Parses a file's bytes; every prefix of a valid file and any trailing byte fails with a `FormatError`.
    public static func parse(_ bytes: [UInt8]) throws(FormatError) -> LoginKeyringFile {
        guard bytes.count >= 4 else {
            throw FormatError(code: .truncated, detail: "\(bytes.count) bytes, shorter than the header (truncated?)")
        }
        guard Array(bytes[0..<4]) == magic else {
            throw FormatError(code: .badMagic, detail: "not a tokenpin login-keyring file (no TPLK magic)")
        }
        guard bytes.count >= headerLength else {
            throw FormatError(code: .truncated, detail: "\(bytes.count) bytes, shorter than the header (truncated?)")
        }
        guard bytes[4] == version else {
            throw FormatError(
                code: .unknownVersion, detail: "format version \(bytes[4]); this tokenpin reads version \(version)")
        }
        let publicKey = Array(bytes[5..<37])
        let length = Int(bytes[37]) << 8 | Int(bytes[38])
        guard length == 0 || (SealedBox.overhead + 1...maximumSealedLength).contains(length) else {
            throw FormatError(code: .badLength, detail: "a sealed password of \(length) bytes cannot hold a password")
        }
        guard bytes.count >= headerLength + length else {
            throw FormatError(
                code: .truncated,
                detail:
                    "the sealed password announces \(length) bytes and \(bytes.count - headerLength) follow (truncated?)"
            )
        }
        guard bytes.count == headerLength + length else {
            throw FormatError(
                code: .trailingBytes, detail: "\(bytes.count - headerLength - length) bytes after the sealed password")
        }
        return LoginKeyringFile(
            publicKey: publicKey, sealedPassword: length == 0 ? nil : Array(bytes[headerLength...]))
    }
}
