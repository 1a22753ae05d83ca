import TokenpinCardCrypto
import TokenpinCore

/// What tokenpin asks its helper, one request per frame, answered by one `HelperReply`.
enum HelperRequest: ~Copyable {
    /// Every token and its usable keys, marked whether `uri` matches each.
    case list(uri: String?)
    /// The key (and its public half) read afresh from its token.
    case key(PKCS11KeyReference)
    /// Log in and derive the ECDH secret with `peerPoint`.
    case derive(PKCS11KeyReference, curve: WeierstrassCurve, pin: SecretBytes?, peerPoint: [UInt8])
    /// Log in and decrypt `cryptogram`, whose plaintext is `expectedLength` bytes.
    case decrypt(
        PKCS11KeyReference, padding: PKCS11RSAPadding, pin: SecretBytes?, cryptogram: [UInt8], expectedLength: Int)
    /// Change the user PIN (on the keypad: with both PINs empty).
    case setPIN(PKCS11KeyReference, old: SecretBytes, new: SecretBytes, keypad: Bool)
    /// The token's description and flags now.
    case status(PKCS11KeyReference)
    /// Whether the token is still in its slot: its description when it is, a failure saying it left when not.
    case presence(PKCS11KeyReference)
    /// Finalize the modules and end.
    case quit

    private enum Tag: UInt8 {
        case list = 1
        case key
        case derive
        case decrypt
        case setPIN
        case status
        case quit
        case presence
    }

    /// Whether it is `quit`.
    var isQuit: Bool {
        switch self {
        case .quit: true
        default: false
        }
    }

    /// What the request does, for messages ("while logging in and deriving").
    var activity: String {
        switch self {
        case .list: "listing tokens"
        case .key: "reading a public key"
        case .derive: "logging in and deriving (C_Login, C_DeriveKey)"
        case .decrypt: "logging in and decrypting (C_Login, C_Decrypt)"
        case .setPIN: "changing the PIN (C_SetPIN)"
        case .status: "reading the token's flags"
        case .presence: "looking for the token in its slot"
        case .quit: "ending"
        }
    }

    /// The request as a frame (in guarded memory: it may carry PINs).
    consuming func encode() -> WireWriter {
        switch consume self {
        case .list(let uri):
            var writer = WireWriter(Tag.list.rawValue)
            writer.append(uri != nil)
            writer.append(uri ?? "")
            return writer
        case .key(let reference):
            var writer = WireWriter(Tag.key.rawValue)
            writer.append(reference)
            return writer
        case .derive(let reference, let curve, let pin, let point):
            var writer = WireWriter(Tag.derive.rawValue)
            writer.append(reference)
            writer.append(HelperCoding.index(of: curve))
            writer.append(optionalSecret: pin)
            writer.append(point)
            return writer
        case .decrypt(let reference, let padding, let pin, let cryptogram, let expectedLength):
            var writer = WireWriter(Tag.decrypt.rawValue)
            writer.append(reference)
            writer.append(HelperCoding.index(of: padding))
            writer.append(optionalSecret: pin)
            writer.append(cryptogram)
            writer.append(count: expectedLength)
            return writer
        case .setPIN(let reference, let old, let new, let keypad):
            var writer = WireWriter(Tag.setPIN.rawValue)
            writer.append(reference)
            writer.append(secret: old)
            writer.append(secret: new)
            writer.append(keypad)
            return writer
        case .status(let reference):
            var writer = WireWriter(Tag.status.rawValue)
            writer.append(reference)
            return writer
        case .presence(let reference):
            var writer = WireWriter(Tag.presence.rawValue)
            writer.append(reference)
            return writer
        case .quit:
            return WireWriter(Tag.quit.rawValue)
        }
    }

    /// A request's public fields, read inside the frame's closure; its secrets only as ranges, copied out of the
    /// frame after (`decode`).
    private struct PublicFields {
        var tag: Tag
        var reference: PKCS11KeyReference?
        var text: String?
        var bytes: [UInt8] = []
        var index: UInt8 = 0
        var number = 0
        var keypad = false
        var secrets: [Range<Int>?] = []

        /// The fields of the request in `raw`, every one checked, nothing after the last.
        static func read(_ raw: UnsafeRawBufferPointer) throws(HelperWireError) -> PublicFields {
            guard let first = raw.first, let tag = Tag(rawValue: first) else {
                throw HelperWireError(.unknownValue, "an unknown request")
            }
            var reader = WireReader(raw)
            var parsed = PublicFields(tag: tag)
            switch tag {
            case .list:
                let present = try reader.bool()
                let uri = try reader.text()
                parsed.text = present ? uri : nil
            case .key, .status, .presence:
                parsed.reference = try reader.reference()
            case .derive, .decrypt:
                parsed.reference = try reader.reference()
                parsed.index = try reader.byte()
                parsed.secrets = [try reader.optionalSecretRange()]
                parsed.bytes = try reader.bytes()
                if tag == .decrypt { parsed.number = try reader.count() }
            case .setPIN:
                parsed.reference = try reader.reference()
                parsed.secrets = [try reader.range(), try reader.range()]
                parsed.keypad = try reader.bool()
            case .quit:
                break
            }
            try reader.finish()
            return parsed
        }
    }

    /// The request in a frame; every field checked, nothing may follow the last one.
    static func decode(_ frame: borrowing SecretBytes) throws(HelperWireError) -> HelperRequest {
        let parsed = try frame.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(HelperWireError) in
            try PublicFields.read(raw)
        }
        func pin(_ index: Int) -> SecretBytes? {
            guard let range = parsed.secrets[index] else { return nil }
            return copySecret(in: frame, at: range)
        }
        switch parsed.tag {
        case .list: return .list(uri: parsed.text)
        case .key: return .key(parsed.reference!)
        case .status: return .status(parsed.reference!)
        case .presence: return .presence(parsed.reference!)
        case .quit: return .quit
        case .derive:
            return .derive(
                parsed.reference!, curve: try HelperCoding.curve(parsed.index), pin: pin(0), peerPoint: parsed.bytes)
        case .decrypt:
            return .decrypt(
                parsed.reference!, padding: try HelperCoding.padding(parsed.index), pin: pin(0),
                cryptogram: parsed.bytes, expectedLength: parsed.number)
        case .setPIN:
            return .setPIN(
                parsed.reference!, old: pin(0) ?? SecretBytes(count: 0), new: pin(1) ?? SecretBytes(count: 0),
                keypad: parsed.keypad)
        }
    }
}
