package import TokenpinAPDU
package import TokenpinCardCrypto

/// The PIV application of one card, opened: selected once, with what a token needs to know about the card read
/// in the same transaction and kept.
///
/// `open(_:)` selects the application and reads the CHUID (for its GUID) and the PIN's tries left (VERIFY with no
/// data, which spends no try); only a card without a GUID is asked for a YubiKey serial then, so a card named by
/// its GUID opens in 3 APDUs and verifies in 5. The YubiKey instructions are sent only after GET VERSION (`FD`,
/// answered `6D00` by other cards, as OpenSC sends it to unknown cards too) named firmware that has them, so a
/// plain PIV card sees no instruction that could count against it; GET VERSION itself is sent once, when first
/// needed (at open without a GUID, else when a slot or the PUK's tries are read).
///
/// Every later exchange runs in `transaction(_:)`: one `connection.exclusive` transaction, selecting the
/// application again first when the connection reset the card since the last selection (a reset drops the
/// selection along with a verified PIN). A `PIVCard` is used from one thread at a time, like its connection.
package final class PIVCard {
    /// The channel to the card.
    package let connection: any CardConnection
    /// The session commands go through; its trace shows PIN commands by their header only.
    package let session: PIVSession
    /// The application property template SELECT answered (`61 {4F …}`).
    package private(set) var applicationTemplate: [UInt8]
    /// The CHUID, when the card has one (YubiKeys ship without; issued PIV cards carry one).
    package private(set) var chuid: PIVCHUID?
    /// GET VERSION's answer once asked: the YubiKey firmware (major, minor, patch), or nil for another card.
    private var probedVersion: [UInt8]??
    /// The YubiKey serial number (firmware 5 and later), nil on other cards.
    package private(set) var yubiKeySerial: UInt32?
    /// The PIN's state when the card was opened: verified, or its tries left.
    package private(set) var pinStatus: PIVPINStatus
    /// When the application was last selected, and whether the card was closed.
    private let application: SelectedApplication

    private init(
        connection: any CardConnection, session: PIVSession, applicationTemplate: [UInt8], pinStatus: PIVPINStatus
    ) {
        self.connection = connection
        self.session = session
        self.applicationTemplate = applicationTemplate
        self.pinStatus = pinStatus
        application = SelectedApplication(selectedOn: connection)
    }

    /// Opens the PIV application on `connection`: SELECT, CHUID, YubiKey version and serial, PIN tries, in one
    /// transaction.
    ///
    /// - Throws: `.applicationNotFound` when the card has no PIV application, `.transport` when the card went
    ///   away, `.malformed` for answers that do not parse (a CHUID that is not one).
    package static func open(_ connection: any CardConnection, trace: ((String) -> Void)? = nil) throws(PIVError)
        -> PIVCard
    {
        let session = PIVSession(connection: connection, trace: trace)
        return try connection.exclusive(transportError: PIVError.transport) {
            () throws(PIVError) -> PIVCard in
            let template = try session.select()
            let card = PIVCard(
                connection: connection, session: session, applicationTemplate: template, pinStatus: .retriesLeft(0))
            card.chuid = try Self.chuid(session)
            if card.guid == nil, let version = try card.firmware(session), version[0] >= 5 {
                card.yubiKeySerial = try session.serial()
            }
            card.pinStatus = try session.pinStatus()
            return card
        }
    }

    /// The CHUID, nil when the card has none.
    private static func chuid(_ session: PIVSession) throws(PIVError) -> PIVCHUID? {
        do {
            return try session.chuid()
        } catch .objectNotFound {
            return nil
        }
    }

    /// The firmware version a YubiKey answers GET VERSION with; nil for a card that does not know the instruction.
    private static func yubiKeyVersion(_ session: PIVSession) throws(PIVError) -> [UInt8]? {
        do {
            return try session.version()
        } catch .unsupported, .invalidSlot, .unexpected {
            return nil
        }
    }

    /// The YubiKey firmware version (major, minor, patch), nil on other cards; GET VERSION the first time only.
    ///
    /// Runs in the caller's transaction (`session` is the one `transaction(_:)` passed).
    package func firmware(_ session: PIVSession) throws(PIVError) -> [UInt8]? {
        if let probedVersion { return probedVersion }
        let version = try Self.yubiKeyVersion(session)
        probedVersion = .some(version)
        return version
    }

    /// Whether the card answers the YubiKey metadata instruction (`F7`, firmware 5.3 and later).
    package func hasMetadata(_ session: PIVSession) throws(PIVError) -> Bool {
        guard let version = try firmware(session) else { return false }
        return version[0] > 5 || (version[0] == 5 && version[1] >= 3)
    }

    /// The CHUID's GUID when the card has one that is not all zero (the placeholder some issuers leave).
    package var guid: [UInt8]? {
        guard let guid = chuid?.guid, guid.count == 16, guid.contains(where: { $0 != 0 }) else { return nil }
        return guid
    }

    /// The card's identity without looking at a key: `piv-guid:<32 hex>` from the CHUID, else
    /// `piv-serial:<decimal>` from the YubiKey serial; nil when the card has neither (see `keyIdentity(_:)`).
    package var identity: String? {
        if let guid { return "piv-guid:" + Hex.encode(guid).lowercased() }
        if let yubiKeySerial { return "piv-serial:\(yubiKeySerial)" }
        return nil
    }

    /// The identity of a card with neither GUID nor serial: `piv-key:` and the first 16 hex digits of the
    /// SHA-256 of the bound key as a binding keeps it (the point, or the RSA modulus without leading zeros).
    package static func keyIdentity(_ publicKey: PIVPublicKey) throws(CardCryptoError) -> String {
        let bytes: [UInt8]
        switch publicKey {
        case .ecc(_, let point): bytes = point
        case .rsa(let modulus, _): bytes = Array(modulus.drop { $0 == 0 })
        }
        return "piv-key:" + Hex.encode(Array(try PublicDigest.sha256(bytes).prefix(8))).lowercased()
    }

    /// The card as prompts show it: `YubiKey PIV 12345678`, `PIV card 1234…abcd` (the GUID's ends), or
    /// `PIV card` when it has neither.
    package var label: String {
        if let yubiKeySerial { return "YubiKey PIV \(yubiKeySerial)" }
        if let guid {
            let hex = Hex.encode(guid).lowercased()
            return "PIV card \(hex.prefix(4))…\(hex.suffix(4))"
        }
        return "PIV card"
    }

    /// Runs `body` in one transaction on the card, selecting the application again first when the connection
    /// reset the card since the last selection.
    ///
    /// - Throws: what `body` throws; `.transport` when the transaction itself fails (the card went away).
    package func transaction<R: ~Copyable>(_ body: (PIVSession) throws(PIVError) -> R) throws(PIVError) -> R {
        let session = self.session
        func select() throws(PIVError) { applicationTemplate = try session.select() }
        return try application.transaction(
            select: select, closed: .transport(.sessionClosed("PIV")), transportError: PIVError.transport
        ) { () throws(PIVError) -> R in try body(session) }
    }

    /// Ends the session: the connection closes, dropping any PIN still verified.
    package func close() { application.close() }
}

/// What a key slot holds, as far as the card says.
package enum PIVSlotContent: Sendable, Equatable {
    /// No key (a YubiKey's metadata says so), or on a card without metadata no certificate naming one.
    case empty
    /// A key whose public half tokenpin can read, and the subject of the slot's certificate when one was read.
    case key(PIVPublicKey, subject: String?)
    /// A key of an algorithm tokenpin cannot read or use, described (`Ed25519`, a certificate's other key type).
    case unsupported(String)
}

extension PIVCard {
    /// What `slot` holds: from YubiKey metadata where the card has it, else from the slot's certificate.
    ///
    /// Runs in the caller's transaction (`session` is the one `transaction(_:)` passed).
    package func content(of slot: PIVSlot, _ session: PIVSession) throws(PIVError) -> PIVSlotContent {
        if try hasMetadata(session) {
            let raw: [UInt8]
            do {
                raw = try session.rawMetadata(for: slot)
            } catch .referencedDataNotFound, .objectNotFound {
                return .empty
            }
            let algorithmByte: UInt8
            do throws(APDUError) {
                guard let found = try TLV.parseAll(raw).first(where: { $0.tag == 0x01 })?.value, found.count == 1 else {
                    throw APDUError(.invalidStructure, "metadata without an algorithm")
                }
                algorithmByte = found[0]
            } catch {
                throw .malformed(error)
            }
            guard let algorithm = PIVAlgorithm(rawValue: algorithmByte),
                algorithm.coordinateLength != nil || algorithm.modulusLength != nil
            else {
                return .unsupported(
                    PIVAlgorithm(rawValue: algorithmByte)?.name ?? "algorithm \(Hex.encode([algorithmByte]))")
            }
            do {
                return .key(try PIVSlotMetadata(parsing: raw).publicKey, subject: nil)
            } catch {
                throw .malformed(error)
            }
        }
        let der: [UInt8]
        do {
            der = try session.certificate(in: slot)
        } catch .objectNotFound {
            return .empty
        }
        do {
            return .key(try PIVPublicKey(certificate: der), subject: PIVPublicKey.subjectCommonName(certificate: der))
        } catch {
            return .unsupported("a certificate whose key tokenpin cannot use (\(error.detail))")
        }
    }
}

extension PIVAlgorithm {
    /// The algorithm as messages name it: `P-256`, `RSA 2048`, `Ed25519`.
    package var name: String {
        switch self {
        case .rsa1024: "RSA 1024"
        case .rsa2048: "RSA 2048"
        case .rsa3072: "RSA 3072"
        case .rsa4096: "RSA 4096"
        case .eccP256: "P-256"
        case .eccP384: "P-384"
        case .ed25519: "Ed25519"
        case .x25519: "X25519"
        }
    }
}
