internal import CP11Kit

/// One attribute of a search or creation template: its type and its value as the module reads it.
struct PKCS11Attribute: Equatable {
    /// The `CKA_` type.
    let type: UInt
    /// The value's bytes: a `CK_BBOOL` is one byte, a `CK_ULONG` eight in host order.
    let value: [UInt8]

    /// A `CK_BBOOL` attribute.
    static func bool(_ type: UInt, _ value: Bool) -> PKCS11Attribute {
        PKCS11Attribute(type: type, value: [value ? UInt8(CK_TRUE) : UInt8(CK_FALSE)])
    }

    /// A `CK_ULONG` attribute (a class, a key type, a length).
    static func ulong(_ type: UInt, _ value: UInt) -> PKCS11Attribute {
        PKCS11Attribute(type: type, value: withUnsafeBytes(of: CK_ULONG(value)) { Array($0) })
    }

    /// A byte-string attribute (`CKA_ID`, `CKA_LABEL`).
    static func bytes(_ type: UInt, _ value: [UInt8]) -> PKCS11Attribute {
        PKCS11Attribute(type: type, value: value)
    }

    /// A `CK_ULONG` read from an attribute value; nil unless it is exactly `CK_ULONG`'s size.
    static func ulong(from value: [UInt8]?) -> UInt? {
        guard let value, value.count == MemoryLayout<CK_ULONG>.size else { return nil }
        return UInt(value.withUnsafeBytes { $0.loadUnaligned(as: CK_ULONG.self) })
    }

    /// A `CK_BBOOL` read from an attribute value; nil unless it is one byte.
    static func bool(from value: [UInt8]?) -> Bool? {
        guard let value, value.count == 1 else { return nil }
        return value[0] != 0
    }

    /// Calls `body` with `attributes` as a `CK_ATTRIBUTE` array whose values stay valid during the call.
    static func withTemplate<R>(
        _ attributes: [PKCS11Attribute], _ body: (UnsafeMutablePointer<CK_ATTRIBUTE>?, CK_ULONG) -> R
    ) -> R {
        let total = attributes.reduce(0) { $0 + $1.value.count }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 8)
        defer { storage.deallocate() }
        var template: [CK_ATTRIBUTE] = []
        var offset = 0
        for attribute in attributes {
            let start = storage.baseAddress! + offset
            attribute.value.withUnsafeBytes { start.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            template.append(
                CK_ATTRIBUTE(
                    type: CK_ATTRIBUTE_TYPE(attribute.type), pValue: attribute.value.isEmpty ? nil : start,
                    ulValueLen: CK_ULONG(attribute.value.count)))
            offset += attribute.value.count
        }
        return template.withUnsafeMutableBufferPointer { body($0.baseAddress, CK_ULONG($0.count)) }
    }

    /// Calls `body` with one pointer per buffer, valid during the call; what `body` writes lands in `buffers`.
    static func withBuffers<R>(_ buffers: inout [[UInt8]], _ body: ([UnsafeMutableRawPointer?]) -> R) -> R {
        let total = buffers.reduce(0) { $0 + $1.count }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 8)
        defer { storage.deallocate() }
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        var pointers: [UnsafeMutableRawPointer?] = []
        var offset = 0
        for buffer in buffers {
            pointers.append(buffer.isEmpty ? nil : storage.baseAddress! + offset)
            offset += buffer.count
        }
        let result = body(pointers)
        offset = 0
        for index in buffers.indices {
            let count = buffers[index].count
            buffers[index] = Array(UnsafeRawBufferPointer(rebasing: storage[offset..<(offset + count)]))
            offset += count
        }
        return result
    }
}

/// The attribute types, object classes, key types and mechanisms tokenpin uses, as Swift integers.
enum PKCS11Constant {
    /// `CK_UNAVAILABLE_INFORMATION` (which does not import): an attribute length for "no such value".
    static let unavailable = CK_ULONG.max
    static let classAttribute = UInt(CKA_CLASS)
    static let tokenAttribute = UInt(CKA_TOKEN)
    static let privateAttribute = UInt(CKA_PRIVATE)
    static let labelAttribute = UInt(CKA_LABEL)
    static let idAttribute = UInt(CKA_ID)
    static let keyTypeAttribute = UInt(CKA_KEY_TYPE)
    static let sensitiveAttribute = UInt(CKA_SENSITIVE)
    static let extractableAttribute = UInt(CKA_EXTRACTABLE)
    static let deriveAttribute = UInt(CKA_DERIVE)
    static let decryptAttribute = UInt(CKA_DECRYPT)
    static let encryptAttribute = UInt(CKA_ENCRYPT)
    static let valueLengthAttribute = UInt(CKA_VALUE_LEN)
    static let modulusAttribute = UInt(CKA_MODULUS)
    static let modulusBitsAttribute = UInt(CKA_MODULUS_BITS)
    static let publicExponentAttribute = UInt(CKA_PUBLIC_EXPONENT)
    static let ecParametersAttribute = UInt(CKA_EC_PARAMS)
    static let ecPointAttribute = UInt(CKA_EC_POINT)

    static let privateKeyClass = UInt(CKO_PRIVATE_KEY)
    static let publicKeyClass = UInt(CKO_PUBLIC_KEY)
    static let secretKeyClass = UInt(CKO_SECRET_KEY)

    static let rsaKeyType = UInt(CKK_RSA)
    static let ecKeyType = UInt(CKK_EC)
    static let genericSecretKeyType = UInt(CKK_GENERIC_SECRET)

    static let ecdhMechanism = UInt(CKM_ECDH1_DERIVE)
    static let rsaPKCSMechanism = UInt(CKM_RSA_PKCS)
    static let rsaOAEPMechanism = UInt(CKM_RSA_PKCS_OAEP)

    static let tokenPresentFlag = UInt(CKF_TOKEN_PRESENT)
    static let removableDeviceFlag = UInt(CKF_REMOVABLE_DEVICE)
    static let hardwareSlotFlag = UInt(CKF_HW_SLOT)
}

/// How a token's RSA key decrypts the challenge, which tokenpin encrypted to its public key.
package enum PKCS11RSAPadding: String, Sendable, Equatable, CaseIterable {
    /// `CKM_RSA_PKCS_OAEP` with SHA-1 and MGF1-SHA-1 and no label: the OAEP every module that has OAEP takes
    /// (SoftHSM 2.6 takes no other; OpenSC unpads it in software). SHA-1's collisions do not weaken OAEP.
    case oaep = "oaep-sha1"
    /// `CKM_RSA_PKCS`: PKCS#1 v1.5, for tokens that list no OAEP.
    case pkcs1 = "pkcs1"

    /// Calls `body` with the `CK_MECHANISM` (and OAEP's parameters), valid during the call.
    func withMechanism<R>(_ body: (UnsafeMutablePointer<CK_MECHANISM>) -> R) -> R {
        switch self {
        case .pkcs1:
            var mechanism = CK_MECHANISM(mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS), pParameter: nil, ulParameterLen: 0)
            return body(&mechanism)
        case .oaep:
            var parameters = CK_RSA_PKCS_OAEP_PARAMS(
                hashAlg: CK_MECHANISM_TYPE(CKM_SHA_1), mgf: CK_RSA_PKCS_MGF_TYPE(CKG_MGF1_SHA1),
                source: CK_RSA_PKCS_OAEP_SOURCE_TYPE(CKZ_DATA_SPECIFIED), pSourceData: nil, ulSourceDataLen: 0)
            return withUnsafeMutableBytes(of: &parameters) { raw in
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS_OAEP), pParameter: raw.baseAddress,
                    ulParameterLen: CK_ULONG(raw.count))
                return body(&mechanism)
            }
        }
    }

    /// The bytes of padding the scheme adds to a message: the largest message is the modulus less these.
    package var overhead: Int {
        switch self {
        case .oaep: 2 * 20 + 2
        case .pkcs1: 11
        }
    }
}
