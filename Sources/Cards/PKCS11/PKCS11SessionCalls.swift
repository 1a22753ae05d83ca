internal import CP11Kit
import TokenpinCore

/// The calls tokenpin makes in a session with a token: opening and closing it, login and logout, the PIN change,
/// object searches and attributes, ECDH derivation and RSA decryption, each checked as `PKCS11Module` says.
extension PKCS11Module {
    /// Opens a serial session with the token in `slot`, read-only unless `readWrite`.
    ///
    /// The corresponding C function is `C_OpenSession`.
    func openSession(_ slot: UInt, readWrite: Bool = false) throws(PKCS11Failure) -> PKCS11Session {
        var handle: CK_SESSION_HANDLE = 0
        let flags = CK_FLAGS(CKF_SERIAL_SESSION) | (readWrite ? CK_FLAGS(CKF_RW_SESSION) : 0)
        try call("C_OpenSession") { f.C_OpenSession!(CK_SLOT_ID(slot), flags, nil, nil, &handle) }
        return PKCS11Session(module: self, handle: UInt(handle))
    }

    /// Closes a session; a failure is ignored (the session is gone either way).
    ///
    /// The corresponding C function is `C_CloseSession`.
    func closeSession(_ handle: UInt) {
        _ = f.C_CloseSession!(CK_SESSION_HANDLE(handle))
    }

    /// Logs the user in (`CKU_USER`) with `pin`, or with none for a token with a protected authentication path
    /// (its reader's keypad or a biometric sensor asks).
    ///
    /// The PIN is passed from its guarded memory; no copy is made here. The corresponding C function is `C_Login`.
    func login(_ session: borrowing PKCS11Session, pin: borrowing SecretBytes?) throws(PKCS11Failure) {
        let handle = CK_SESSION_HANDLE(session.handle)
        let result: CK_RV
        switch pin {
        case .some(let pin):
            result = pin.withUnsafeBytes { bytes in
                let base = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: CK_UTF8CHAR.self))
                return f.C_Login!(handle, CK_USER_TYPE(CKU_USER), base, CK_ULONG(bytes.count))
            }
        case .none:
            result = f.C_Login!(handle, CK_USER_TYPE(CKU_USER), nil, 0)
        }
        try call("C_Login") { result }
    }

    /// Logs the user out of every session of the token; a failure is ignored (closing the sessions ends it too).
    ///
    /// The corresponding C function is `C_Logout`.
    func logout(_ session: borrowing PKCS11Session) {
        _ = f.C_Logout!(CK_SESSION_HANDLE(session.handle))
    }

    /// Changes the logged-in user's PIN (or, not logged in, the user PIN from `old` to `new`).
    ///
    /// Both PINs are passed from guarded memory. The corresponding C function is `C_SetPIN`.
    func setPIN(_ session: borrowing PKCS11Session, old: borrowing SecretBytes, new: borrowing SecretBytes)
        throws(PKCS11Failure)
    {
        let handle = CK_SESSION_HANDLE(session.handle)
        let result = old.withUnsafeBytes { oldBytes in
            new.withUnsafeBytes { newBytes in
                f.C_SetPIN!(
                    handle,
                    UnsafeMutablePointer(mutating: oldBytes.baseAddress?.assumingMemoryBound(to: CK_UTF8CHAR.self)),
                    CK_ULONG(oldBytes.count),
                    UnsafeMutablePointer(mutating: newBytes.baseAddress?.assumingMemoryBound(to: CK_UTF8CHAR.self)),
                    CK_ULONG(newBytes.count))
            }
        }
        try call("C_SetPIN") { result }
    }

    /// Has the token's protected authentication path (its reader's keypad) ask for the current and the new PIN.
    ///
    /// The corresponding C function is `C_SetPIN` with no PINs.
    func setPINOnKeypad(_ session: borrowing PKCS11Session) throws(PKCS11Failure) {
        let handle = CK_SESSION_HANDLE(session.handle)
        try call("C_SetPIN") { f.C_SetPIN!(handle, nil, 0, nil, 0) }
    }

    /// The handles of the objects matching `template`, at most `limit` of them.
    ///
    /// The search is started, read once and finished; a module that fills more handles than asked for is refused.
    /// The corresponding C functions are `C_FindObjectsInit`, `C_FindObjects` and `C_FindObjectsFinal`.
    func findObjects(_ session: borrowing PKCS11Session, matching template: [PKCS11Attribute], limit: Int)
        throws(PKCS11Failure) -> [UInt]
    {
        let handle = CK_SESSION_HANDLE(session.handle)
        try call("C_FindObjectsInit") {
            PKCS11Attribute.withTemplate(template) { attributes, count in
                f.C_FindObjectsInit!(handle, attributes, count)
            }
        }
        var objects = [CK_OBJECT_HANDLE](repeating: 0, count: max(1, limit))
        var found: CK_ULONG = 0
        let result = f.C_FindObjects!(handle, &objects, CK_ULONG(objects.count), &found)
        let finished = f.C_FindObjectsFinal!(handle)
        try call("C_FindObjects") { result }
        try call("C_FindObjectsFinal") { finished }
        guard found <= objects.count else {
            throw .module(PKCS11ModuleError(.absurdCount, "C_FindObjects found \(found) objects in \(objects.count)"))
        }
        return objects.prefix(Int(found)).map { UInt($0) }
    }

    /// The values of the attributes `types` of `object`: nil for one the object lacks or keeps secret.
    ///
    /// Asks for the lengths first, then the values, and refuses lengths past `maximumAttributeLength` or a second
    /// answer longer than the first. For public attributes only: the values land in ordinary memory. The
    /// corresponding C function is `C_GetAttributeValue`.
    func attributes(_ session: borrowing PKCS11Session, of object: UInt, _ types: [UInt]) throws(PKCS11Failure)
        -> [UInt: [UInt8]]
    {
        let handle = CK_SESSION_HANDLE(session.handle)
        var template = types.map { CK_ATTRIBUTE(type: CK_ATTRIBUTE_TYPE($0), pValue: nil, ulValueLen: 0) }
        let sizing = f.C_GetAttributeValue!(handle, CK_OBJECT_HANDLE(object), &template, CK_ULONG(template.count))
        try Self.partial(sizing)
        let lengths = template.map { $0.ulValueLen }
        for (index, length) in lengths.enumerated()
        where length != PKCS11Constant.unavailable && length > Self.maximumAttributeLength {
            throw .module(
                PKCS11ModuleError(.wrongLength, "attribute 0x\(String(types[index], radix: 16)) is \(length) bytes"))
        }
        var buffers = lengths.map { length in
            [UInt8](repeating: 0, count: length == PKCS11Constant.unavailable ? 0 : Int(length))
        }
        var values: [UInt: [UInt8]] = [:]
        let result: CK_RV = PKCS11Attribute.withBuffers(&buffers) { pointers in
            for index in template.indices {
                let available = lengths[index] != PKCS11Constant.unavailable
                template[index].pValue = available ? pointers[index] : nil
                template[index].ulValueLen = available ? lengths[index] : 0
            }
            return f.C_GetAttributeValue!(
                handle, CK_OBJECT_HANDLE(object), &template, CK_ULONG(template.count))
        }
        try Self.partial(result)
        for index in template.indices where lengths[index] != PKCS11Constant.unavailable {
            let length = template[index].ulValueLen
            if length == PKCS11Constant.unavailable { continue }
            guard length <= lengths[index] else {
                throw .module(
                    PKCS11ModuleError(
                        .wrongLength,
                        "attribute 0x\(String(types[index], radix: 16)) grew from \(lengths[index]) to \(length) bytes")
                )
            }
            values[types[index]] = Array(buffers[index].prefix(Int(length)))
        }
        return values
    }

    /// `C_GetAttributeValue` fills what it can and says so with these codes; anything else fails the call.
    private static func partial(_ result: CK_RV) throws(PKCS11Failure) {
        guard result != CKR_OK, result != CKR_ATTRIBUTE_SENSITIVE, result != CKR_ATTRIBUTE_TYPE_INVALID else { return }
        throw .call(PKCS11Error(rawValue: result), "C_GetAttributeValue")
    }

    /// The value (`CKA_VALUE`) of a secret-key object, read into guarded memory; it must be `length` bytes.
    ///
    /// The length is asked first and checked before anything is copied, so the value lands only in the guarded
    /// buffer. The corresponding C function is `C_GetAttributeValue`.
    func secretValue(_ session: borrowing PKCS11Session, of object: UInt, length: Int) throws(PKCS11Failure)
        -> SecretBytes
    {
        let handle = CK_SESSION_HANDLE(session.handle)
        var attribute = CK_ATTRIBUTE(type: CK_ATTRIBUTE_TYPE(CKA_VALUE), pValue: nil, ulValueLen: 0)
        try call("C_GetAttributeValue") { f.C_GetAttributeValue!(handle, CK_OBJECT_HANDLE(object), &attribute, 1) }
        guard attribute.ulValueLen == length else {
            let reported = attribute.ulValueLen == PKCS11Constant.unavailable ? "none" : "\(attribute.ulValueLen) bytes"
            throw .module(
                PKCS11ModuleError(.wrongLength, "the derived secret is \(reported), the curve's is \(length) bytes"))
        }
        let secret = SecretBytes(count: length)
        let result = secret.withUnsafeMutableBytes { buffer in
            attribute.pValue = buffer.baseAddress
            attribute.ulValueLen = CK_ULONG(buffer.count)
            return f.C_GetAttributeValue!(handle, CK_OBJECT_HANDLE(object), &attribute, 1)
        }
        try call("C_GetAttributeValue") { result }
        guard attribute.ulValueLen == length else {
            throw .module(
                PKCS11ModuleError(.wrongLength, "the derived secret changed its length to \(attribute.ulValueLen)"))
        }
        return secret
    }

    /// Derives a session secret-key object from `baseKey` with ECDH (`CKM_ECDH1_DERIVE`, `CKD_NULL`: the raw x
    /// coordinate) against `peerPoint`, an uncompressed point, and returns its handle.
    ///
    /// The corresponding C function is `C_DeriveKey`.
    func deriveECDH(
        _ session: borrowing PKCS11Session, baseKey: UInt, peerPoint: [UInt8], template: [PKCS11Attribute]
    ) throws(PKCS11Failure) -> UInt {
        let handle = CK_SESSION_HANDLE(session.handle)
        var derived: CK_OBJECT_HANDLE = 0
        var point = peerPoint
        let result: CK_RV = point.withUnsafeMutableBufferPointer { pointBytes in
            var parameters = CK_ECDH1_DERIVE_PARAMS(
                kdf: ck_ec_kdf_t(CKD_NULL), ulSharedDataLen: 0, pSharedData: nil,
                ulPublicDataLen: CK_ULONG(pointBytes.count), pPublicData: pointBytes.baseAddress)
            return withUnsafeMutableBytes(of: &parameters) { raw in
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_ECDH1_DERIVE), pParameter: raw.baseAddress,
                    ulParameterLen: CK_ULONG(raw.count))
                return PKCS11Attribute.withTemplate(template) { attributes, count in
                    return f.C_DeriveKey!(
                        handle, &mechanism, CK_OBJECT_HANDLE(baseKey), attributes, count, &derived)
                }
            }
        }
        try call("C_DeriveKey") { result }
        return UInt(derived)
    }

    /// Destroys an object (the session key a derivation made); a failure is ignored: a session object ends with
    /// its session anyway.
    ///
    /// The corresponding C function is `C_DestroyObject`.
    func destroyObject(_ session: borrowing PKCS11Session, _ object: UInt) {
        _ = f.C_DestroyObject!(CK_SESSION_HANDLE(session.handle), CK_OBJECT_HANDLE(object))
    }

    /// Decrypts `cryptogram` with `key` under `padding`, into guarded memory of at most `capacity` bytes.
    ///
    /// The output buffer is as long as the modulus, so one call suffices; a module that claims to have written more
    /// than it was given is refused. The corresponding C functions are `C_DecryptInit` and `C_Decrypt`.
    func decrypt(
        _ session: borrowing PKCS11Session, key: UInt, padding: PKCS11RSAPadding, cryptogram: [UInt8], capacity: Int
    ) throws(PKCS11Failure) -> SecretBytes {
        let handle = CK_SESSION_HANDLE(session.handle)
        let initialized: CK_RV = padding.withMechanism { mechanism in
            return f.C_DecryptInit!(handle, mechanism, CK_OBJECT_HANDLE(key))
        }
        try call("C_DecryptInit") { initialized }
        let output = SecretBytes(count: capacity)
        var written = CK_ULONG(capacity)
        var input = cryptogram
        let result = output.withUnsafeMutableBytes { buffer in
            input.withUnsafeMutableBufferPointer { inputBytes in
                return f.C_Decrypt!(
                    handle, inputBytes.baseAddress, CK_ULONG(inputBytes.count),
                    buffer.baseAddress?.assumingMemoryBound(to: CK_BYTE.self), &written)
            }
        }
        try call("C_Decrypt") { result }
        guard written <= capacity else {
            throw .module(PKCS11ModuleError(.wrongLength, "C_Decrypt wrote \(written) bytes into \(capacity)"))
        }
        return output.prefix(Int(written))
    }
}
