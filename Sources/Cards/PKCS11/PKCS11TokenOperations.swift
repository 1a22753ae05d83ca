internal import CP11Kit
import TokenpinCardCrypto
import TokenpinCore

/// What a request asks of a token, in the helper: the key read again, the token's flags, login with one key
/// operation (ECDH derive, RSA decrypt) and the PIN change, each in a session of its own that ends with it.
extension PKCS11Tokens {
    /// The module and token a request names, checked: the slot must still hold the token with that serial.
    func open(_ reference: PKCS11KeyReference) throws(PKCS11TokenError) -> (PKCS11Module, PKCS11TokenFlags) {
        guard modules.indices.contains(reference.moduleIndex) else {
            throw .invalidRequest("no module \(reference.moduleIndex) in this helper")
        }
        let module = modules[reference.moduleIndex]
        let info = try Self.map(module) { () throws(PKCS11Failure) in try module.tokenInfo(reference.slot) }
        let serial = PKCS11KeyAttributes.text(withUnsafeBytes(of: info.serialNumber) { Array($0) })
        guard serial == reference.serial else {
            throw .tokenChanged(
                "slot \(reference.slot) of \(module.name) now holds the token with serial \(serial), not \(reference.serial)"
            )
        }
        return (module, PKCS11TokenFlags(rawValue: UInt(info.flags)))
    }

    /// The key `reference` names, read afresh from its token (its public half included): no login.
    func key(_ reference: PKCS11KeyReference) throws(PKCS11TokenError) -> PKCS11Key {
        let (module, _) = try open(reference)
        let uri = try PKCS11URI(parsing: "pkcs11:")
        let found = try Self.map(module) { () throws(PKCS11Failure) -> PKCS11TokenListing? in
            try listing(module: module, index: reference.moduleIndex, slot: reference.slot, uri: uri)
        }
        guard let key = found?.keys.first(where: { $0.id == reference.id }) else {
            let reasons = found?.unusable.filter { $0.contains("(id \(PKCS11KeyAttributes.hex(reference.id)))") } ?? []
            throw .unusable(
                "no usable key with id \(PKCS11KeyAttributes.hex(reference.id)) on the token"
                    + (reasons.isEmpty ? "" : ": " + reasons.joined(separator: "; ")))
        }
        return key
    }

    /// The token's flags now (for the tries hint after a refusal).
    func status(_ reference: PKCS11KeyReference) throws(PKCS11TokenError) -> PKCS11TokenInfo {
        let (module, _) = try open(reference)
        return try Self.map(module) { () throws(PKCS11Failure) in
            let info = try module.tokenInfo(reference.slot)
            let slotInfo = try module.slotInfo(reference.slot)
            return Self.token(
                info, slotInfo: slotInfo, module: module, index: reference.moduleIndex, slot: reference.slot)
        }
    }

    /// Logs in (with `pin`, or through the protected authentication path, or not at all when the token needs no
    /// login), runs `body` and logs out.
    private func withLogin<R: ~Copyable>(
        _ reference: PKCS11KeyReference, pin: borrowing SecretBytes?,
        _ body: (PKCS11Module, borrowing PKCS11Session) throws(PKCS11TokenError) -> R
    ) throws(PKCS11TokenError) -> R {
        let (module, flags) = try open(reference)
        if flags.contains(.userPINLocked) { throw .pinLocked }
        let session = try Self.map(module) { () throws(PKCS11Failure) in try module.openSession(reference.slot) }
        if flags.contains(.loginRequired) {
            let protected = flags.contains(.protectedAuthenticationPath)
            if !protected, pin == nil {
                throw .invalidRequest("the token needs its PIN and none was given; nothing was sent to the token")
            }
            do throws(PKCS11Failure) {
                if protected { try module.login(session, pin: nil) } else { try module.login(session, pin: pin) }
            } catch .call(let error, _) where error.isWrongPIN {
                let tries = (try? module.tokenInfo(reference.slot)).map { PKCS11TokenFlags(rawValue: UInt($0.flags)) }
                throw .wrongPIN(tries.map(PKCS11PINTries.init) ?? .unknown)
            } catch .call(let error, _) where error == .pinLocked {
                throw .pinLocked
            } catch .call(let error, _) where error == .userAlreadyLoggedIn {
                // Another session of this process logged in; the operation runs under that login.
            } catch {
                throw Self.tokenError(error, module)
            }
        }
        defer { module.logout(session) }
        return try body(module, session)
    }

    /// The one private key with `reference`'s `CKA_ID`, of `keyType`, allowed to `use` (derive or decrypt).
    private func privateKey(
        _ reference: PKCS11KeyReference, keyType: UInt, use: UInt, module: PKCS11Module,
        session: borrowing PKCS11Session
    ) throws(PKCS11TokenError) -> UInt {
        let template: [PKCS11Attribute] = [
            .ulong(PKCS11Constant.classAttribute, PKCS11Constant.privateKeyClass),
            .ulong(PKCS11Constant.keyTypeAttribute, keyType), .bytes(PKCS11Constant.idAttribute, reference.id),
            .bool(use, true),
        ]
        let found = try Self.map(module) { () throws(PKCS11Failure) in
            try module.findObjects(session, matching: template, limit: 2)
        }
        let what = use == PKCS11Constant.deriveAttribute ? "derive (CKA_DERIVE)" : "decrypt (CKA_DECRYPT)"
        let id = PKCS11KeyAttributes.hex(reference.id)
        guard found.count == 1 else {
            throw found.isEmpty
                ? .unusable("no private key with id \(id) that may \(what) is on the token after login")
                : .unusable("more than one private key with id \(id) may \(what); tokenpin cannot tell which to use")
        }
        return found[0]
    }

    /// Logs in and derives the ECDH secret of the key with `peerPoint` (`CKM_ECDH1_DERIVE`, `CKD_NULL`), read from a
    /// session object that is destroyed before this returns: the x coordinate, in guarded memory.
    ///
    /// The PIN is used from its guarded memory. The secret's length is the curve's coordinate length, checked.
    func derive(
        _ reference: PKCS11KeyReference, curve: WeierstrassCurve, pin: borrowing SecretBytes?, peerPoint: [UInt8]
    )
        throws(PKCS11TokenError) -> SecretBytes
    {
        guard peerPoint.count == curve.pointLength, peerPoint.first == 0x04 else {
            throw .invalidRequest("the challenge is not an uncompressed \(curve.rawValue) point")
        }
        return try withLogin(reference, pin: pin) { (module, session) throws(PKCS11TokenError) -> SecretBytes in
            let key = try privateKey(
                reference, keyType: PKCS11Constant.ecKeyType, use: PKCS11Constant.deriveAttribute, module: module,
                session: session)
            let parameters = try Self.map(module) { () throws(PKCS11Failure) in
                try module.attributes(session, of: key, [PKCS11Constant.ecParametersAttribute])
            }
            if let value = parameters[PKCS11Constant.ecParametersAttribute],
                let onToken = PKCS11KeyAttributes.curveParameters.first(where: { $0.1 == value })?.0, onToken != curve
            {
                throw .unusable("the private key is on \(onToken.rawValue), the binding's key on \(curve.rawValue)")
            }
            let length = curve.coordinateLength
            var template: [PKCS11Attribute] = [
                .ulong(PKCS11Constant.classAttribute, PKCS11Constant.secretKeyClass),
                .ulong(PKCS11Constant.keyTypeAttribute, PKCS11Constant.genericSecretKeyType),
                .bool(PKCS11Constant.tokenAttribute, false), .bool(PKCS11Constant.sensitiveAttribute, false),
                .bool(PKCS11Constant.extractableAttribute, true),
                .ulong(PKCS11Constant.valueLengthAttribute, UInt(length)),
            ]
            let derived: UInt
            do throws(PKCS11Failure) {
                derived = try module.deriveECDH(session, baseKey: key, peerPoint: peerPoint, template: template)
            } catch .call(let error, _)
                where [.templateInconsistent, .attributeTypeInvalid, .attributeValueInvalid].contains(error)
            {
                // Some modules take no CKA_VALUE_LEN with CKD_NULL (the length is the curve's); ask without it.
                template.removeLast()
                derived = try Self.map(module) { () throws(PKCS11Failure) in
                    try module.deriveECDH(session, baseKey: key, peerPoint: peerPoint, template: template)
                }
            } catch {
                throw Self.tokenError(error, module)
            }
            defer { module.destroyObject(session, derived) }
            return try Self.map(module) { () throws(PKCS11Failure) in
                try module.secretValue(session, of: derived, length: length)
            }
        }
    }

    /// Logs in and decrypts `cryptogram` (as long as the modulus) with the RSA key under `padding`; the plaintext
    /// must be `expectedLength` bytes. In guarded memory.
    func decrypt(
        _ reference: PKCS11KeyReference, padding: PKCS11RSAPadding, pin: borrowing SecretBytes?, cryptogram: [UInt8],
        expectedLength: Int
    ) throws(PKCS11TokenError) -> SecretBytes {
        guard RSAKeys.supportedModulusBits.contains(cryptogram.count * 8) else {
            throw .invalidRequest("the challenge is \(cryptogram.count) bytes, not an RSA 2048-4096 cryptogram")
        }
        guard (1...(cryptogram.count - padding.overhead)).contains(expectedLength) else {
            throw .invalidRequest("a \(expectedLength)-byte secret does not fit the cryptogram")
        }
        return try withLogin(reference, pin: pin) { (module, session) throws(PKCS11TokenError) -> SecretBytes in
            let key = try privateKey(
                reference, keyType: PKCS11Constant.rsaKeyType, use: PKCS11Constant.decryptAttribute, module: module,
                session: session)
            let plain = try Self.map(module) { () throws(PKCS11Failure) in
                try module.decrypt(
                    session, key: key, padding: padding, cryptogram: cryptogram, capacity: cryptogram.count)
            }
            guard plain.count == expectedLength else {
                throw .malformed("C_Decrypt gave \(plain.count) bytes, the secret has \(expectedLength)")
            }
            return plain
        }
    }

    /// Changes the user PIN from `old` to `new`; with `keypad` (and no PINs), the token's protected authentication
    /// path asks for both.
    ///
    /// Both PINs are used from guarded memory; a wrong current PIN may spend a try.
    func setPIN(_ reference: PKCS11KeyReference, old: borrowing SecretBytes, new: borrowing SecretBytes, keypad: Bool)
        throws(PKCS11TokenError)
    {
        let (module, flags) = try open(reference)
        if flags.contains(.userPINLocked) { throw .pinLocked }
        if keypad, !flags.contains(.protectedAuthenticationPath) {
            throw .invalidRequest("the token has no keypad to enter its PINs on; nothing was sent to the token")
        }
        let session = try Self.map(module) { () throws(PKCS11Failure) in
            try module.openSession(reference.slot, readWrite: true)
        }
        do throws(PKCS11Failure) {
            if keypad { try module.setPINOnKeypad(session) } else { try module.setPIN(session, old: old, new: new) }
        } catch .call(let error, _) where error == .pinIncorrect {
            let tries = (try? module.tokenInfo(reference.slot)).map { PKCS11TokenFlags(rawValue: UInt($0.flags)) }
            throw .wrongPIN(tries.map(PKCS11PINTries.init) ?? .unknown)
        } catch .call(let error, _) where error == .pinLocked {
            throw .pinLocked
        } catch .call(let error, _) where error == .pinLengthRange || error == .pinInvalid {
            throw .invalidRequest("the token does not take the new PIN (\(error.name)); the PIN is unchanged")
        } catch {
            throw Self.tokenError(error, module)
        }
    }

    // MARK: Errors

    static func map<R: ~Copyable>(_ module: PKCS11Module, _ body: () throws(PKCS11Failure) -> R)
        throws(PKCS11TokenError) -> R
    {
        do {
            return try body()
        } catch {
            throw tokenError(error, module)
        }
    }

    static func tokenError(_ failure: PKCS11Failure, _ module: PKCS11Module) -> PKCS11TokenError {
        switch failure {
        case .call(let error, let function):
            if error == .pinLocked { return .pinLocked }
            return .module(error, function: function, module: module.name)
        case .module(let error): return .malformed("\(module.name): \(error.detail)")
        }
    }
}

/// What a request names to find a key again in the helper: the module and slot it was listed in, the serial of
/// the token expected there, and the key's `CKA_ID`.
package struct PKCS11KeyReference: Sendable, Equatable {
    package var moduleIndex: Int
    package var slot: UInt
    package var serial: String
    package var id: [UInt8]

    package init(moduleIndex: Int, slot: UInt, serial: String, id: [UInt8]) {
        self.moduleIndex = moduleIndex
        self.slot = slot
        self.serial = serial
        self.id = id
    }

    /// The reference of a listed key.
    package init(_ key: PKCS11Key) {
        self.init(moduleIndex: key.token.moduleIndex, slot: key.token.slot, serial: key.token.serial, id: key.id)
    }
}
