internal import CP11Kit
import TokenpinCardCrypto
import TokenpinCore

/// The tokens of the loaded modules and the operations tokenpin performs on them: listing with key discovery,
/// and login followed by one key operation. This runs where the modules are loaded, the helper process.
///
/// Every operation opens its own session, checks that the slot still holds the token it names (its serial
/// number), logs in, does its work, logs out and closes the session, so no login outlives a request.
final class PKCS11Tokens {
    let modules: [PKCS11Module]
    /// The token last found in its slot by `presence`, with what it said then (see PKCS11Presence.swift).
    var lastPresent: (reference: PKCS11KeyReference, token: PKCS11TokenInfo)?

    /// The most private and public key objects read from one token.
    static let maximumKeys = 64

    init(modules: [PKCS11Module]) { self.modules = modules }

    /// Loads the modules `source` names.
    static func load(_ source: PKCS11ModuleSource) throws(PKCS11ModuleError) -> PKCS11Tokens {
        switch source {
        case .p11kit: PKCS11Tokens(modules: try PKCS11Module.loadConfigured())
        case .path(let path): PKCS11Tokens(modules: [try PKCS11Module.load(path: path)])
        }
    }

    /// PKCS#11 calls made so far, over all modules.
    var calls: Int { modules.reduce(0) { $0 + $1.calls } }

    /// Finalizes every module loaded by path.
    func finalize() {
        for module in modules { module.finalize() }
    }

    // MARK: Listing

    /// Every token present with the keys on it that can agree a secret, each marked whether `uri` matches it.
    ///
    /// A module or token whose calls fail is skipped and noted; one that answers something impossible (a count
    /// or length past its buffer, a point off its curve) fails the whole listing: nothing it says can be trusted.
    func list(uri text: String?) throws(PKCS11TokenError) -> PKCS11Inventory {
        // No URI is the empty one, which p11-kit matches with everything.
        let uri = try PKCS11URI(parsing: text ?? "pkcs11:")
        var inventory = PKCS11Inventory()
        for (index, module) in modules.enumerated() {
            do throws(PKCS11Failure) {
                let info = try module.info()
                let moduleMatches = uri.matches(module: info, name: module.name, path: module.path)
                for slot in try module.slots(tokenPresent: true) {
                    do throws(PKCS11Failure) {
                        guard let listing = try listing(module: module, index: index, slot: slot, uri: uri) else {
                            continue
                        }
                        var listed = listing
                        if !moduleMatches {
                            listed.matches = listed.matches.map { _ in false }
                            listed.looseMatches = listed.looseMatches.map { _ in false }
                        }
                        inventory.listings.append(listed)
                    } catch .call(let error, let function) {
                        inventory.problems.append("\(module.name), slot \(slot): \(function) failed: \(error)")
                    }
                }
            } catch {
                switch error {
                case .call(let error, let function):
                    inventory.problems.append("\(module.name): \(function) failed: \(error)")
                case .module(let error):
                    throw .malformed("\(module.name): \(error.detail)")
                }
            }
        }
        return inventory
    }

    /// The token in `slot` and its keys; nil when the slot turns out to hold none.
    func listing(module: PKCS11Module, index: Int, slot: UInt, uri: borrowing PKCS11URI)
        throws(PKCS11Failure) -> PKCS11TokenListing?
    {
        let slotInfo = try module.slotInfo(slot)
        guard UInt(slotInfo.flags) & PKCS11Constant.tokenPresentFlag != 0 else { return nil }
        let tokenInfo: CK_TOKEN_INFO
        do {
            tokenInfo = try module.tokenInfo(slot)
        } catch .call(let error, _) where error == .tokenNotPresent {
            return nil
        }
        let token = Self.token(tokenInfo, slotInfo: slotInfo, module: module, index: index, slot: slot)
        let tokenMatches = uri.matches(slot: slotInfo, id: slot) && uri.matches(token: tokenInfo)
        let mechanisms = Set(try module.mechanisms(slot))
        let session = try module.openSession(slot)
        let found = try keys(in: session, module: module, token: token, tokenInfo: tokenInfo, mechanisms: mechanisms)
        // A private key hidden until login has a label no one can read yet: its match is tried with its public
        // key's label (the same on most tokens) and, for `looseMatches`, with none (OpenSC labels them differently).
        var matches: [Bool] = []
        var looseMatches: [Bool] = []
        for key in found.keys {
            let attributes = [
                PKCS11Attribute.ulong(PKCS11Constant.classAttribute, PKCS11Constant.privateKeyClass),
                .bytes(PKCS11Constant.idAttribute, key.id),
            ]
            let labelled =
                key.label.isEmpty
                ? attributes : attributes + [.bytes(PKCS11Constant.labelAttribute, Array(key.label.utf8))]
            let strict = tokenMatches && uri.matches(attributes: labelled)
            matches.append(strict)
            looseMatches.append(strict || (!key.privateKeySeen && tokenMatches && uri.matches(attributes: attributes)))
        }
        return PKCS11TokenListing(
            token: token, keys: found.keys, matches: matches, looseMatches: looseMatches, unusable: found.unusable)
    }

    /// The token as tokenpin describes it, from what its module says.
    static func token(
        _ info: CK_TOKEN_INFO, slotInfo: CK_SLOT_INFO, module: PKCS11Module, index: Int, slot: UInt
    ) -> PKCS11TokenInfo {
        let minimum = UInt(info.ulMinPinLen)
        let maximum = UInt(info.ulMaxPinLen)
        // CK_EFFECTIVELY_INFINITE (0) and CK_UNAVAILABLE_INFORMATION as a maximum: no bound the token states.
        var pinLength: ClosedRange<Int>?
        if maximum != 0, maximum != PKCS11Constant.unavailable, minimum <= maximum, maximum <= 4096 {
            pinLength = Int(minimum)...Int(maximum)
        }
        return PKCS11TokenInfo(
            module: module.name, moduleIndex: index, slot: slot,
            slotDescription: PKCS11KeyAttributes.text(withUnsafeBytes(of: slotInfo.slotDescription) { Array($0) }),
            isHardware: UInt(slotInfo.flags) & PKCS11Constant.hardwareSlotFlag != 0,
            isRemovable: UInt(slotInfo.flags) & PKCS11Constant.removableDeviceFlag != 0,
            label: PKCS11KeyAttributes.text(withUnsafeBytes(of: info.label) { Array($0) }),
            manufacturer: PKCS11KeyAttributes.text(withUnsafeBytes(of: info.manufacturerID) { Array($0) }),
            model: PKCS11KeyAttributes.text(withUnsafeBytes(of: info.model) { Array($0) }),
            serial: PKCS11KeyAttributes.text(withUnsafeBytes(of: info.serialNumber) { Array($0) }),
            flags: PKCS11TokenFlags(rawValue: UInt(info.flags)), pinLength: pinLength,
            uri: PKCS11URI.format(token: info))
    }

    /// One key object's attributes that discovery reads.
    private struct KeyObject {
        var keyType: UInt?
        var id: [UInt8]
        var label: String
        var derive: Bool?
        var decrypt: Bool?
        var ecParameters: [UInt8]?
        var ecPoint: [UInt8]?
        var modulus: [UInt8]?
        var exponent: [UInt8]?
    }

    private static let keyAttributeTypes: [UInt] = [
        PKCS11Constant.keyTypeAttribute, PKCS11Constant.idAttribute, PKCS11Constant.labelAttribute,
        PKCS11Constant.deriveAttribute, PKCS11Constant.decryptAttribute, PKCS11Constant.ecParametersAttribute,
        PKCS11Constant.ecPointAttribute, PKCS11Constant.modulusAttribute, PKCS11Constant.publicExponentAttribute,
    ]

    /// The key objects of `objectClass` visible in the session.
    private func keyObjects(_ session: borrowing PKCS11Session, module: PKCS11Module, objectClass: UInt)
        throws(PKCS11Failure) -> [KeyObject]
    {
        let handles = try module.findObjects(
            session, matching: [.ulong(PKCS11Constant.classAttribute, objectClass)], limit: Self.maximumKeys)
        var objects: [KeyObject] = []
        for handle in handles {
            let values = try module.attributes(session, of: handle, Self.keyAttributeTypes)
            objects.append(
                KeyObject(
                    keyType: PKCS11Attribute.ulong(from: values[PKCS11Constant.keyTypeAttribute]),
                    id: values[PKCS11Constant.idAttribute] ?? [],
                    label: PKCS11KeyAttributes.text(values[PKCS11Constant.labelAttribute] ?? []),
                    derive: PKCS11Attribute.bool(from: values[PKCS11Constant.deriveAttribute]),
                    decrypt: PKCS11Attribute.bool(from: values[PKCS11Constant.decryptAttribute]),
                    ecParameters: values[PKCS11Constant.ecParametersAttribute],
                    ecPoint: values[PKCS11Constant.ecPointAttribute],
                    modulus: values[PKCS11Constant.modulusAttribute],
                    exponent: values[PKCS11Constant.publicExponentAttribute]))
        }
        return objects
    }

    /// The keys on a token that agree secrets, from its private keys (where they show before login) and its
    /// public keys, paired by `CKA_ID` and key type; the others with why they cannot be used.
    private func keys(
        in session: borrowing PKCS11Session, module: PKCS11Module, token: PKCS11TokenInfo, tokenInfo: CK_TOKEN_INFO,
        mechanisms: Set<UInt>
    ) throws(PKCS11Failure) -> (keys: [PKCS11Key], unusable: [String]) {
        let privateKeys = try keyObjects(session, module: module, objectClass: PKCS11Constant.privateKeyClass)
        let publicKeys = try keyObjects(session, module: module, objectClass: PKCS11Constant.publicKeyClass)
        var keys: [PKCS11Key] = []
        var unusable: [String] = []
        var paired = Set<Int>()
        func name(_ object: KeyObject) -> String {
            let label = object.label.isEmpty ? "" : " '\(object.label)'"
            return "key\(label) (id \(PKCS11KeyAttributes.hex(object.id)))"
        }
        for privateKey in privateKeys {
            let publicIndex = publicKeys.firstIndex { $0.id == privateKey.id && $0.keyType == privateKey.keyType }
            if let publicIndex { paired.insert(publicIndex) }
            let publicKey = publicIndex.map { publicKeys[$0] }
            do throws(PKCS11ModuleError) {
                if let key = try key(
                    privateKey, publicKey: publicKey, privateSeen: true, token: token, tokenInfo: tokenInfo,
                    mechanisms: mechanisms, unusable: &unusable)
                {
                    keys.append(key)
                }
            } catch {
                unusable.append("\(name(privateKey)): \(error.detail)")
            }
        }
        // Public keys whose private key the token hides until login (CKA_PRIVATE): checked when logging in.
        let hidesPrivateKeys = token.flags.contains(.loginRequired)
        for (index, publicKey) in publicKeys.enumerated() where !paired.contains(index) && hidesPrivateKeys {
            do throws(PKCS11ModuleError) {
                if let key = try key(
                    publicKey, publicKey: publicKey, privateSeen: false, token: token, tokenInfo: tokenInfo,
                    mechanisms: mechanisms, unusable: &unusable)
                {
                    keys.append(key)
                }
            } catch {
                unusable.append("\(name(publicKey)): \(error.detail)")
            }
        }
        return (keys, unusable)
    }

    /// The key a private key object (or, with `privateSeen` false, a public key standing for a hidden one) makes,
    /// or nil with why in `unusable`; a malformed public attribute throws.
    private func key(
        _ object: KeyObject, publicKey: KeyObject?, privateSeen: Bool, token: PKCS11TokenInfo,
        tokenInfo: CK_TOKEN_INFO, mechanisms: Set<UInt>, unusable: inout [String]
    ) throws(PKCS11ModuleError) -> PKCS11Key? {
        let label = object.label.isEmpty ? (publicKey?.label ?? "") : object.label
        let name = "key\(label.isEmpty ? "" : " '\(label)'") (id \(PKCS11KeyAttributes.hex(object.id)))"
        let usable: (algorithm: PKCS11KeyAlgorithm, publicKey: PKCS11PublicKey)?
        switch object.keyType {
        case PKCS11Constant.ecKeyType:
            usable = try ecKey(object, publicKey: publicKey, privateSeen: privateSeen, mechanisms: mechanisms)
                .recording("EC \(name)", in: &unusable)
        case PKCS11Constant.rsaKeyType:
            usable = try rsaKey(object, publicKey: publicKey, privateSeen: privateSeen, mechanisms: mechanisms)
                .recording("RSA \(name)", in: &unusable)
        default:
            let type = object.keyType.map { "0x" + String($0, radix: 16) } ?? "no"
            unusable.append("\(name): key type \(type) agrees no secret tokenpin uses (EC or RSA)")
            usable = nil
        }
        guard let (algorithm, publicHalf) = usable else { return nil }
        return PKCS11Key(
            token: token, id: object.id, label: label, algorithm: algorithm, publicKey: publicHalf,
            privateKeySeen: privateSeen,
            // A private key hidden until login has a label no one can read yet (OpenSC's PIV keys: `KEY MAN key`,
            // its public key `KEY MAN pubkey`): its URI names it by token and id alone.
            uri: PKCS11URI.format(token: tokenInfo, keyID: object.id, label: privateSeen ? label : ""))
    }

    /// An EC key that derives (CKM_ECDH1_DERIVE) on a curve tokenpin knows, with its public point; or why not.
    private func ecKey(
        _ object: KeyObject, publicKey: KeyObject?, privateSeen: Bool, mechanisms: Set<UInt>
    ) throws(PKCS11ModuleError) -> KeyUse {
        if privateSeen, object.derive != true {
            return .unusable("the private key may not derive (CKA_DERIVE is false)")
        }
        guard mechanisms.contains(PKCS11Constant.ecdhMechanism) else {
            return .unusable("the token does not list CKM_ECDH1_DERIVE")
        }
        guard let parameters = object.ecParameters ?? publicKey?.ecParameters else {
            return .unusable("no EC parameters (CKA_EC_PARAMS)")
        }
        let curve = try PKCS11KeyAttributes.curve(parameters: parameters)
        guard let pointValue = publicKey?.ecPoint ?? object.ecPoint else {
            return .unusable("no public key (no public key object with its CKA_ID, no CKA_EC_POINT)")
        }
        return .usable(.ecdh(curve), .ec(point: try PKCS11KeyAttributes.point(pointValue, on: curve)))
    }

    /// An RSA key that decrypts, with the padding the token offers (OAEP before PKCS#1 v1.5) and its public
    /// half; or why not.
    private func rsaKey(
        _ object: KeyObject, publicKey: KeyObject?, privateSeen: Bool, mechanisms: Set<UInt>
    ) throws(PKCS11ModuleError) -> KeyUse {
        if privateSeen, object.decrypt != true {
            return .unusable("the private key may not decrypt (CKA_DECRYPT is false)")
        }
        let padding: PKCS11RSAPadding
        if mechanisms.contains(PKCS11Constant.rsaOAEPMechanism) {
            padding = .oaep
        } else if mechanisms.contains(PKCS11Constant.rsaPKCSMechanism) {
            padding = .pkcs1
        } else {
            return .unusable("the token lists neither CKM_RSA_PKCS_OAEP nor CKM_RSA_PKCS")
        }
        guard let modulus = object.modulus ?? publicKey?.modulus, let exponent = object.exponent ?? publicKey?.exponent
        else {
            return .unusable("no public key (CKA_MODULUS, CKA_PUBLIC_EXPONENT)")
        }
        let rsa = try PKCS11KeyAttributes.rsa(modulus: modulus, exponent: exponent)
        return .usable(.rsa(bits: rsa.bits, padding: padding), .rsa(modulus: rsa.modulus, exponent: rsa.exponent))
    }
}

/// What a key object is good for: an algorithm and public key tokenpin can use, or why it cannot.
private enum KeyUse {
    case usable(PKCS11KeyAlgorithm, PKCS11PublicKey)
    case unusable(String)

    /// The usable key, or nil with `name: why` added to `unusable`.
    func recording(_ name: String, in unusable: inout [String]) -> (
        algorithm: PKCS11KeyAlgorithm, publicKey: PKCS11PublicKey
    )? {
        switch self {
        case .usable(let algorithm, let publicKey): return (algorithm, publicKey)
        case .unusable(let why):
            unusable.append("\(name): \(why)")
            return nil
        }
    }
}
