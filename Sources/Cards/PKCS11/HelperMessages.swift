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

    /// The request in a frame; every field checked, nothing may follow the last one.
    static func decode(_ frame: borrowing SecretBytes) throws(HelperWireError) -> HelperRequest {
        // Public fields are read inside the closure; secrets are copied out of the frame by their ranges after.
        struct Parsed {
            var tag: Tag
            var reference: PKCS11KeyReference?
            var text: String?
            var bytes: [UInt8] = []
            var index: UInt8 = 0
            var number = 0
            var keypad = false
            var secrets: [Range<Int>?] = []
        }
        let parsed = try frame.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(HelperWireError) -> Parsed in
            guard let first = raw.first, let tag = Tag(rawValue: first) else {
                throw HelperWireError(.unknownValue, "an unknown request")
            }
            var reader = WireReader(raw)
            var parsed = Parsed(tag: tag)
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

/// Everything a listing found: the tokens with their keys, and what could not be read.
public struct PKCS11Inventory: Sendable, Equatable {
    /// The tokens present, with their usable keys.
    public var listings: [PKCS11TokenListing]
    /// Modules, slots or tokens that could not be read, each a sentence (they are skipped, as systemd does).
    public var problems: [String]

    public init(listings: [PKCS11TokenListing] = [], problems: [String] = []) {
        self.listings = listings
        self.problems = problems
    }

    /// Every usable key with whether the listing's URI matched it.
    public var keys: [(key: PKCS11Key, matches: Bool)] {
        listings.flatMap { listing in zip(listing.keys, listing.matches).map { ($0, $1) } }
    }

    /// Every usable key the listing's URI matched with hidden private keys' labels left out.
    var looselyMatchedKeys: [PKCS11Key] {
        listings.flatMap { listing in zip(listing.keys, listing.looseMatches).filter(\.1).map(\.0) }
    }
}

/// The helper's answer to one request; `calls` is the number of PKCS#11 calls it made for it.
enum HelperReply: ~Copyable {
    /// The modules loaded (sent once, at start, before any request).
    case ready(modules: [String], calls: Int)
    case inventory(PKCS11Inventory, calls: Int)
    case key(PKCS11Key, calls: Int)
    case secret(SecretBytes, calls: Int)
    case done(calls: Int)
    case token(PKCS11TokenInfo, calls: Int)
    case failure(PKCS11TokenError, calls: Int)

    private enum Tag: UInt8 {
        case ready = 0x81
        case inventory
        case key
        case secret
        case done
        case token
        case failure = 0xFF
    }

    consuming func encode() -> WireWriter {
        switch consume self {
        case .ready(let modules, let calls):
            var writer = WireWriter(Tag.ready.rawValue)
            writer.append(count: modules.count)
            for module in modules { writer.append(module) }
            writer.append(count: calls)
            return writer
        case .inventory(let inventory, let calls):
            var writer = WireWriter(Tag.inventory.rawValue)
            writer.append(count: inventory.listings.count)
            for listing in inventory.listings {
                writer.append(listing.token)
                writer.append(count: listing.keys.count)
                for index in listing.keys.indices {
                    writer.append(listing.keys[index], withToken: false)
                    writer.append(listing.matches[index])
                    writer.append(listing.looseMatches[index])
                }
                writer.append(count: listing.unusable.count)
                for reason in listing.unusable { writer.append(reason) }
            }
            writer.append(count: inventory.problems.count)
            for problem in inventory.problems { writer.append(problem) }
            writer.append(count: calls)
            return writer
        case .key(let key, let calls):
            var writer = WireWriter(Tag.key.rawValue)
            writer.append(key, withToken: true)
            writer.append(count: calls)
            return writer
        case .secret(let secret, let calls):
            var writer = WireWriter(Tag.secret.rawValue)
            writer.append(secret: secret)
            writer.append(count: calls)
            return writer
        case .done(let calls):
            var writer = WireWriter(Tag.done.rawValue)
            writer.append(count: calls)
            return writer
        case .token(let token, let calls):
            var writer = WireWriter(Tag.token.rawValue)
            writer.append(token)
            writer.append(count: calls)
            return writer
        case .failure(let error, let calls):
            var writer = WireWriter(Tag.failure.rawValue)
            writer.append(error)
            writer.append(count: calls)
            return writer
        }
    }

    /// The reply in a frame, every field checked (the helper runs a module tokenpin does not trust: what it sends is
    /// as hostile as the module): keys are validated again here, points on their curves, RSA sizes supported.
    static func decode(_ frame: borrowing SecretBytes) throws(HelperWireError) -> HelperReply {
        enum Parsed {
            case ready([String], Int)
            case inventory(PKCS11Inventory, Int)
            case key(PKCS11Key, Int)
            case secret(Range<Int>, Int)
            case done(Int)
            case token(PKCS11TokenInfo, Int)
            case failure(PKCS11TokenError, Int)
        }
        let parsed = try frame.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(HelperWireError) -> Parsed in
            guard let first = raw.first, let tag = Tag(rawValue: first) else {
                throw HelperWireError(.unknownValue, "an unknown reply")
            }
            var reader = WireReader(raw)
            let parsed: Parsed
            switch tag {
            case .ready:
                var modules: [String] = []
                for _ in 0..<(try reader.count()) { modules.append(try reader.text()) }
                parsed = .ready(modules, try reader.count())
            case .inventory:
                var inventory = PKCS11Inventory()
                for _ in 0..<(try reader.count()) {
                    let token = try reader.token()
                    var keys: [PKCS11Key] = []
                    var matches: [Bool] = []
                    var looseMatches: [Bool] = []
                    for _ in 0..<(try reader.count()) {
                        keys.append(try reader.key(token: token))
                        matches.append(try reader.bool())
                        looseMatches.append(try reader.bool())
                    }
                    var unusable: [String] = []
                    for _ in 0..<(try reader.count()) { unusable.append(try reader.text()) }
                    inventory.listings.append(
                        PKCS11TokenListing(
                            token: token, keys: keys, matches: matches, looseMatches: looseMatches, unusable: unusable))
                }
                for _ in 0..<(try reader.count()) { inventory.problems.append(try reader.text()) }
                parsed = .inventory(inventory, try reader.count())
            case .key:
                parsed = .key(try reader.key(token: nil), try reader.count())
            case .secret:
                parsed = .secret(try reader.range(), try reader.count())
            case .done:
                parsed = .done(try reader.count())
            case .token:
                parsed = .token(try reader.token(), try reader.count())
            case .failure:
                parsed = .failure(try reader.error(), try reader.count())
            }
            try reader.finish()
            return parsed
        }
        switch parsed {
        case .ready(let modules, let calls): return .ready(modules: modules, calls: calls)
        case .inventory(let inventory, let calls): return .inventory(inventory, calls: calls)
        case .key(let key, let calls): return .key(key, calls: calls)
        case .secret(let range, let calls): return .secret(copySecret(in: frame, at: range), calls: calls)
        case .done(let calls): return .done(calls: calls)
        case .token(let token, let calls): return .token(token, calls: calls)
        case .failure(let error, let calls): return .failure(error, calls: calls)
        }
    }
}

/// The small enumerations of the wire, as indices.
enum HelperCoding {
    static let curves = WeierstrassCurve.allCases
    static let paddings = PKCS11RSAPadding.allCases
    static let tries: [PKCS11PINTries] = [.unknown, .low, .finalTry, .locked]

    static func index(of curve: WeierstrassCurve) -> UInt8 { UInt8(curves.firstIndex(of: curve) ?? 0) }
    static func index(of padding: PKCS11RSAPadding) -> UInt8 { UInt8(paddings.firstIndex(of: padding) ?? 0) }

    static func curve(_ index: UInt8) throws(HelperWireError) -> WeierstrassCurve {
        guard curves.indices.contains(Int(index)) else { throw HelperWireError(.unknownValue, "curve \(index)") }
        return curves[Int(index)]
    }

    static func padding(_ index: UInt8) throws(HelperWireError) -> PKCS11RSAPadding {
        guard paddings.indices.contains(Int(index)) else { throw HelperWireError(.unknownValue, "padding \(index)") }
        return paddings[Int(index)]
    }
}

extension WireWriter {
    mutating func append(optionalSecret secret: borrowing SecretBytes?) {
        switch secret {
        case .some(let value):
            append(true)
            append(secret: value)
        case .none:
            append(false)
        }
    }

    mutating func append(_ reference: PKCS11KeyReference) {
        append(count: reference.moduleIndex)
        append(UInt64(reference.slot))
        append(reference.serial)
        append(reference.id)
    }

    mutating func append(_ token: PKCS11TokenInfo) {
        append(token.module)
        append(count: token.moduleIndex)
        append(UInt64(token.slot))
        append(token.slotDescription)
        append(token.isHardware)
        append(token.isRemovable)
        append(token.label)
        append(token.manufacturer)
        append(token.model)
        append(token.serial)
        append(UInt64(token.flags.rawValue))
        append(token.pinLength != nil)
        append(count: token.pinLength?.lowerBound ?? 0)
        append(count: token.pinLength?.upperBound ?? 0)
        append(token.uri)
    }

    mutating func append(_ key: PKCS11Key, withToken: Bool) {
        if withToken { append(key.token) }
        append(key.id)
        append(key.label)
        switch key.algorithm {
        case .ecdh(let curve):
            append(UInt8(1))
            append(HelperCoding.index(of: curve))
        case .rsa(let bits, let padding):
            append(UInt8(2))
            append(UInt32(clamping: bits))
            append(HelperCoding.index(of: padding))
        }
        switch key.publicKey {
        case .ec(let point):
            append(point)
            append([UInt8]())
        case .rsa(let modulus, let exponent):
            append(modulus)
            append(exponent)
        }
        append(key.privateKeySeen)
        append(key.uri)
    }

    mutating func append(_ error: PKCS11TokenError) {
        switch error {
        case .wrongPIN(let tries):
            append(UInt8(1))
            append(UInt8(HelperCoding.tries.firstIndex(of: tries) ?? 0))
        case .pinLocked: append(UInt8(2))
        case .noToken(let text): appendText(3, text)
        case .ambiguous(let uris):
            append(UInt8(4))
            append(count: uris.count)
            for uri in uris { append(uri) }
        case .unusable(let text): appendText(5, text)
        case .module(let code, let function, let module):
            append(UInt8(6))
            append(UInt64(code.rawValue))
            append(function)
            append(module)
        case .malformed(let text): appendText(7, text)
        case .notAnswering(let text): appendText(8, text)
        case .helperFailed(let text): appendText(9, text)
        case .tokenChanged(let text): appendText(10, text)
        case .invalidRequest(let text): appendText(11, text)
        }
    }

    private mutating func appendText(_ code: UInt8, _ text: String) {
        append(code)
        append(text)
    }
}

extension WireReader {
    mutating func optionalSecretRange() throws(HelperWireError) -> Range<Int>? {
        try bool() ? try range() : nil
    }

    mutating func reference() throws(HelperWireError) -> PKCS11KeyReference {
        PKCS11KeyReference(
            moduleIndex: try count(), slot: UInt(try uint64()), serial: try text(), id: try bytes())
    }

    mutating func token() throws(HelperWireError) -> PKCS11TokenInfo {
        let module = try text()
        let moduleIndex = try count()
        let slot = UInt(try uint64())
        let slotDescription = try text()
        let isHardware = try bool()
        let isRemovable = try bool()
        let label = try text()
        let manufacturer = try text()
        let model = try text()
        let serial = try text()
        let flags = PKCS11TokenFlags(rawValue: UInt(try uint64()))
        let hasLength = try bool()
        let minimum = try count()
        let maximum = try count()
        let uri = try text()
        guard uri.hasPrefix("pkcs11:") else { throw HelperWireError(.unknownValue, "a token URI without pkcs11:") }
        guard minimum <= maximum else { throw HelperWireError(.unknownValue, "a PIN length range upside down") }
        // One encoding per value: the helper writes 0 and 0 when the token gives no PIN length.
        guard hasLength || (minimum == 0 && maximum == 0) else {
            throw HelperWireError(.unknownValue, "a PIN length range after \"no PIN length\"")
        }
        return PKCS11TokenInfo(
            module: module, moduleIndex: moduleIndex, slot: slot, slotDescription: slotDescription,
            isHardware: isHardware, isRemovable: isRemovable, label: label, manufacturer: manufacturer, model: model,
            serial: serial, flags: flags, pinLength: hasLength ? minimum...maximum : nil, uri: uri)
    }

    /// A key, its public half validated as discovery validates it.
    mutating func key(token listed: PKCS11TokenInfo?) throws(HelperWireError) -> PKCS11Key {
        let token: PKCS11TokenInfo
        if let listed { token = listed } else { token = try self.token() }
        let id = try bytes()
        let label = try text()
        let algorithm: PKCS11KeyAlgorithm
        let kind = try byte()
        switch kind {
        case 1: algorithm = .ecdh(try HelperCoding.curve(try byte()))
        case 2:
            let bits = Int(try uint32())
            algorithm = .rsa(bits: bits, padding: try HelperCoding.padding(try byte()))
        default: throw HelperWireError(.unknownValue, "key algorithm \(kind)")
        }
        let first = try bytes()
        let second = try bytes()
        let publicKey: PKCS11PublicKey
        do throws(PKCS11ModuleError) {
            switch algorithm {
            case .ecdh(let curve):
                guard first.count == curve.pointLength else {
                    throw PKCS11ModuleError(.malformedAttribute, "a \(curve.rawValue) point of \(first.count) bytes")
                }
                guard second.isEmpty else {
                    throw PKCS11ModuleError(.malformedAttribute, "an exponent beside a \(curve.rawValue) point")
                }
                publicKey = .ec(point: try PKCS11KeyAttributes.point(first, on: curve))
            case .rsa(let bits, _):
                let rsa = try PKCS11KeyAttributes.rsa(modulus: first, exponent: second)
                guard rsa.bits == bits else {
                    throw PKCS11ModuleError(.malformedAttribute, "an RSA key said to have \(bits) bits has \(rsa.bits)")
                }
                // The helper sends the modulus and exponent as discovery normalised them, without leading zeros.
                guard rsa.modulus == first, rsa.exponent == second else {
                    throw PKCS11ModuleError(.malformedAttribute, "an RSA modulus or exponent with leading zeros")
                }
                publicKey = .rsa(modulus: rsa.modulus, exponent: rsa.exponent)
            }
        } catch {
            throw HelperWireError(.unknownValue, "a key that does not check: \(error.detail)")
        }
        let privateSeen = try bool()
        let uri = try text()
        guard uri.hasPrefix("pkcs11:") else { throw HelperWireError(.unknownValue, "a key URI without pkcs11:") }
        return PKCS11Key(
            token: token, id: id, label: label, algorithm: algorithm, publicKey: publicKey, privateKeySeen: privateSeen,
            uri: uri)
    }

    mutating func error() throws(HelperWireError) -> PKCS11TokenError {
        let code = try byte()
        switch code {
        case 1:
            let index = Int(try byte())
            guard HelperCoding.tries.indices.contains(index) else { throw HelperWireError(.unknownValue, "tries") }
            return .wrongPIN(HelperCoding.tries[index])
        case 2: return .pinLocked
        case 3: return .noToken(try text())
        case 4:
            var uris: [String] = []
            for _ in 0..<(try count()) { uris.append(try text()) }
            return .ambiguous(uris)
        case 5: return .unusable(try text())
        case 6:
            let rv = PKCS11Error(rawValue: UInt(truncatingIfNeeded: try uint64()))
            return .module(rv, function: try text(), module: try text())
        case 7: return .malformed(try text())
        case 8: return .notAnswering(try text())
        case 9: return .helperFailed(try text())
        case 10: return .tokenChanged(try text())
        case 11: return .invalidRequest(try text())
        default: throw HelperWireError(.unknownValue, "failure \(code)")
        }
    }
}
