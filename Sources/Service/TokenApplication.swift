internal import TokenpinAPDU
internal import TokenpinCore

/// The card applications a token can be.
package enum TokenApplicationKind: String, Sendable, CaseIterable, Equatable {
    /// The OpenPGP card application (OpenPGP cards, YubiKeys, Nitrokeys, Gnuk): its decryption key.
    case openpgp
    /// The PIV application (SP 800-73-4: PIV and CAC cards, YubiKeys): a key management key.
    case piv
    /// A key on a PKCS#11 token (SoftHSM, OpenSC's cards, vendor middleware), through the `tokenpin-pkcs11` helper.
    case pkcs11

    /// The application a binding's identity belongs to: PIV identities start with `piv-`, PKCS#11 ones `pkcs11-`.
    init(identity: String) {
        self = identity.hasPrefix("piv-") ? .piv : identity.hasPrefix("pkcs11-") ? .pkcs11 : .openpgp
    }

    /// The applications found by selecting them on a card in a PC/SC reader (PKCS#11 tokens are found by a module).
    static let cardApplications: [TokenApplicationKind] = [.openpgp, .piv]

    /// How messages name it.
    package var displayName: String {
        switch self {
        case .openpgp: "OpenPGP"
        case .piv: "PIV"
        case .pkcs11: "PKCS#11"
        }
    }
}

/// How the daemon learns that the token a user verified with went away (`on-card-removal = lock`): what each
/// token application declares (`TokenApplication.removalWatch`), so nothing reads it out of a serial.
package enum TokenRemovalWatch: String, Sendable, Equatable {
    /// PC/SC reader events name the reader it is in (a card behind pcscd: OpenPGP, PIV).
    case readerEvents
    /// No reader event names it: it is watched on its own, by asking its module whether it is still in its slot (a
    /// PKCS#11 key, whose "reader" is its URI).
    case ownWatch
}

/// The PIV slots a token may bind to, as `--slot` names them: authentication, signature, key management, card
/// authentication and the twenty retired key management slots.
package enum PIVSlotName {
    /// `9a 9c 9d 9e 82 ... 95`.
    package static let all: [String] = ["9a", "9c", "9d", "9e"] + (0x82...0x95).map { String($0, radix: 16) }
}

/// What went wrong with a card application, in the service's terms; becomes a fallback to the PIN or an error.
enum TokenCardError: Error {
    /// The card has no such application.
    case applicationNotFound
    /// The card PIN was wrong; the card's tries left.
    case wrongPIN(triesLeft: Int)
    /// The card PIN (or the credential asked for) is blocked.
    case blocked
    /// The reader, pcscd or the card went away, or the transport failed.
    case transport(CardTransportError)
    /// The card answered something that is not what the application defines.
    case malformed(String)
    /// The key asked for cannot be used (no key, an algorithm tokenpin does not support, a signing-only key).
    case unusable(String)
    /// The card refused a command for another reason, described.
    case refused(String)
    /// The PIN entry on the reader's keypad ended without the card judging a PIN: nothing was counted.
    case keypadRefused(PinpadRefusal)
}

/// A key on the card that a token slot can bind to, with its public half as a binding keeps it.
struct TokenCardKey {
    /// Where the key lives: nil for the OpenPGP decryption key, the slot (`9d`, `82`...) for PIV.
    var slot: String?
    /// The key agreement it supports.
    var algorithm: TokenKeyAlgorithm
    /// The public key (the point, the cv25519 key or the RSA modulus).
    var publicKey: [UInt8]
    /// RSA only: the public exponent.
    var exponent: [UInt8]?
}

/// How a blocked (or forgotten) card PIN is replaced.
enum UnblockCredential: Equatable {
    /// The OpenPGP Reset Code.
    case resetCode
    /// The OpenPGP admin PIN (PW3).
    case adminPIN
    /// The PIV PIN Unblocking Key.
    case puk
}

/// One card application opened for one operation: all the token needs from OpenPGP, PIV, or the next one.
///
/// Opening selects the application and reads, in one transaction, what the operations need: the card's
/// identity, the PIN's tries left, the keys. Every method that talks to the card runs its commands in one
/// transaction of its own, selecting the application again first when the connection reset the card since
/// (the application's session does this). The service sees cards only through this protocol.
protocol TokenApplication: AnyObject {
    /// Which application this is.
    var kind: TokenApplicationKind { get }
    /// The reader the card is in.
    var reader: String { get }
    /// The card's identity as a binding records it and `--serial` matches it. OpenPGP: manufacturer and
    /// serial number, 12 hex digits.
    var identity: String { get }
    /// The card as lists and messages show it: `0006:12345678 (Yubico)`.
    var label: String { get }
    /// The card as a prompt for one of its secrets names it, the way its owner knows it: `YubiKey 5 12345678`,
    /// `YubiKey PIV 12345678`, `OpenPGP card FFFE:0000AAAA`.
    var promptName: String { get }
    /// The card PIN's tries left, as read at open.
    var pinTriesLeft: Int { get }
    /// The longest card PIN the card takes, in bytes.
    var pinMaxLength: Int { get }
    /// Why the card cannot be bound as it is (no key, an unsupported algorithm), or nil.
    var unusableReason: String? { get }
    /// How its removal is noticed: PC/SC reader events by default.
    var removalWatch: TokenRemovalWatch { get }
    /// The key a binding would use as the card is, for lists: `rsa2048`, `nistp256 in 9d`; nil when none.
    var keyDescription: String? { get }

    /// The key a binding uses: the one in `slot` where the application has slots (nil: its default).
    func bindableKey(slot: String?) throws(TokenCardError) -> TokenCardKey

    /// The command the bound key answers a challenge with, as messages name it: `PSO:DECIPHER`,
    /// `GENERAL AUTHENTICATE`.
    var keyOperationName: String { get }

    /// Verifies the card PIN and has the bound key answer the binding's challenge, in one transaction.
    ///
    /// The answer crossed the reader line: the service checks it against the secret it computed (binding) or
    /// opens the slot with it (verify), and never seals a slot under it; every seal is made under a fresh
    /// challenge the card has not seen (`PINService.freshAgreement`).
    func answer(pin: borrowing SecretBytes, binding: TokenBinding, algorithm: TokenKeyAlgorithm)
        throws(TokenCardError) -> SecretBytes

    /// Checks the card PIN on the card (VERIFY and nothing else), before an operation writes to the card: a wrong
    /// PIN throws `.wrongPIN` and nothing on the card changes.
    func checkPIN(_ pin: borrowing SecretBytes) throws(TokenCardError)

    /// Generates a new key for the token (`--generate-key`), in `slot` where the application has slots.
    ///
    /// Called after the card PIN was checked (`checkPIN`). Asks for the credential the card needs (the admin PIN,
    /// a management key) and checks it on the card, then shows what it would replace and asks (`assumeYes`
    /// answers for scripts), and only then generates and returns the new key. A wrong credential or a refusal
    /// throws and writes nothing.
    ///
    /// With `adminKeypad` (an OpenPGP card whose admin PIN the reader's keypad takes) the question comes first and the
    /// admin PIN is typed on the keypad in the generation's own transaction, so it is entered once.
    func generateKey(slot: String?, assumeYes: Bool, adminKeypad: CardKeypad?, _ interaction: some Interaction) throws
        -> TokenCardKey

    /// The card-authentication key a binding records (PIV `9E`: a key that signs without a PIN), or nil when the
    /// card has none or the application defines none (OpenPGP cards cannot prove themselves without a PIN).
    func cardAuthenticationKey() -> CardAuthenticationKey?

    /// Has the card prove it holds the private half of `key`: it signs a fresh random challenge, with no PIN.
    /// Throws `.refused` when the answer is not a signature by that key; a card that fails gets no PIN.
    func prove(_ key: CardAuthenticationKey) throws(TokenCardError)

    /// Changes the card PIN from `current` to `new`.
    func changePIN(current: borrowing SecretBytes, new: borrowing SecretBytes) throws(TokenCardError)

    /// The ways this application unblocks its PIN, the preferred first.
    var unblockCredentials: [UnblockCredential] { get }
    /// The tries left of an unblocking credential, as read at open; nil when the card cannot tell without
    /// spending one (a PIV card's PUK outside YubiKey metadata).
    func triesLeft(_ credential: UnblockCredential) -> Int?
    /// Sets a new card PIN with `credential`, resetting its counter.
    func unblock(with credential: UnblockCredential, secret: borrowing SecretBytes, newPIN: borrowing SecretBytes)
        throws(TokenCardError)

    /// The card PIN's tries left, read from the card now (after a refusal); nil when it does not answer.
    func pinTriesNow() -> Int?

    /// Ends the session: the connection closes and no verified PIN outlives it.
    func close()
}

extension TokenApplication {
    var removalWatch: TokenRemovalWatch { .readerEvents }

    /// `generateKey` with every credential at the keyboard.
    func generateKey(slot: String?, assumeYes: Bool, _ interaction: some Interaction) throws -> TokenCardKey {
        try generateKey(slot: slot, assumeYes: assumeYes, adminKeypad: nil, interaction)
    }

    func cardAuthenticationKey() -> CardAuthenticationKey? { nil }

    func prove(_ key: CardAuthenticationKey) throws(TokenCardError) {
        throw .unusable("a \(kind.displayName) card cannot prove which card it is without its PIN")
    }
}

/// Opens the application of `kind` on the card behind `connection`: its SELECT and the reads it caches.
func openTokenApplication(_ kind: TokenApplicationKind, connection: any CardConnection, reader: String)
    throws(TokenCardError) -> any TokenApplication
{
    switch kind {
    case .openpgp: return try OpenPGPToken.open(connection: connection, reader: reader)
    case .piv: return try PIVToken.open(connection: connection, reader: reader)
    case .pkcs11: throw .applicationNotFound  // a module finds these (PKCS11Token.open), not a card connection
    }
}

extension TokenBinding {
    /// The application the binding was made through; OpenPGP for bindings that name none.
    var applicationKind: TokenApplicationKind {
        if let application, let kind = TokenApplicationKind(rawValue: application) { return kind }
        return TokenApplicationKind(identity: serial)
    }

    /// Records the application and the slot (PIV) the binding is made through; OpenPGP records neither, so its
    /// bindings stay as they were.
    mutating func setApplication(_ kind: TokenApplicationKind, slot: String?) {
        application = kind == .openpgp ? nil : kind.rawValue
        self.slot = kind == .openpgp ? nil : slot
    }
}

extension TokenApplication {
    var promptName: String { label }
}
