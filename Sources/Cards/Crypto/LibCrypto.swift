internal import COpenSSL
internal import TokenpinCore

// Owners of libcrypto objects: each frees its object once, private material cleared first. Each C function
// tokenpin calls is reached through these few types, so the rest of the module reads as Swift.

/// libcrypto's key-type selection bits (`OSSL_KEYMGMT_SELECT_*`); the composite macros do not import.
enum KeySelection {
    /// `EVP_PKEY_PUBLIC_KEY`: domain parameters, other parameters and the public key.
    static let publicKey: Int32 = 0x86
    /// `EVP_PKEY_KEYPAIR`: the public key and the private key.
    static let keyPair: Int32 = 0x87
}

/// The oldest error on libcrypto's thread-local queue, as text, with the queue emptied.
///
/// The corresponding C functions are `ERR_get_error` and `ERR_error_string_n`.
func libcryptoError(_ what: String) -> CardCryptoError {
    let code = ERR_get_error()
    ERR_clear_error()
    guard code != 0 else { return CardCryptoError(.operationFailed, "\(what) failed in libcrypto") }
    var buffer = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(code, &buffer, buffer.count)
    let message = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    return CardCryptoError(.operationFailed, "\(what) failed in libcrypto: \(message)")
}

/// An owned `BIGNUM`; a secret one lives in libcrypto's secure heap (where set up) and is cleared when freed.
struct BigNumber: ~Copyable {
    let pointer: OpaquePointer
    let isSecret: Bool

    /// A new zero number. The corresponding C functions are `BN_new` and `BN_secure_new`.
    init(secret: Bool) throws(CardCryptoError) {
        guard let pointer = secret ? BN_secure_new() : BN_new() else { throw libcryptoError("BN_new") }
        self.pointer = pointer
        isSecret = secret
    }

    /// The unsigned big-endian number held in guarded memory, as a secret number.
    ///
    /// The corresponding C function is `BN_bin2bn`.
    init(secret bytes: borrowing SecretBytes) throws(CardCryptoError) {
        guard let made = BN_secure_new() else { throw libcryptoError("BN_secure_new") }
        let loaded = bytes.withUnsafeBytes { buffer in
            BN_bin2bn(buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(clamping: buffer.count), made)
        }
        guard loaded != nil else {
            BN_clear_free(made)
            throw libcryptoError("BN_bin2bn")
        }
        pointer = made
        isSecret = true
    }

    /// A public number from its big-endian bytes.
    init(_ bytes: [UInt8]) throws(CardCryptoError) {
        var made: OpaquePointer?
        bytes.withUnsafeBufferPointer { made = BN_bin2bn($0.baseAddress, Int32(clamping: $0.count), nil) }
        guard let made else { throw libcryptoError("BN_bin2bn") }
        pointer = made
        isSecret = false
    }

    /// Takes ownership of a number libcrypto allocated.
    init(owning pointer: OpaquePointer, secret: Bool) {
        self.pointer = pointer
        isSecret = secret
    }

    deinit {
        if isSecret { BN_clear_free(pointer) } else { BN_free(pointer) }
    }

    /// The number of significant bits. The corresponding C function is `BN_num_bits`.
    var bitCount: Int { Int(BN_num_bits(pointer)) }

    /// Whether the number is odd. The corresponding C function is `BN_is_odd`.
    var isOdd: Bool { BN_is_odd(pointer) == 1 }

    /// The number as exactly `length` big-endian bytes (public values).
    func bytes(length: Int? = nil) throws(CardCryptoError) -> [UInt8] {
        let length = length ?? (bitCount + 7) / 8
        var out = [UInt8](repeating: 0, count: length)
        let written = out.withUnsafeMutableBufferPointer { BN_bn2binpad(pointer, $0.baseAddress, Int32(length)) }
        guard written == Int32(length) else {
            throw CardCryptoError(.invalidLength, "number does not fit \(length) bytes")
        }
        return out
    }

    /// The number as exactly `length` big-endian bytes in guarded memory (private values).
    func secretBytes(length: Int? = nil) throws(CardCryptoError) -> SecretBytes {
        let length = length ?? (bitCount + 7) / 8
        let out = SecretBytes(count: length)
        let written = out.withUnsafeMutableBytes {
            BN_bn2binpad(pointer, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(length))
        }
        guard written == Int32(length) else {
            throw CardCryptoError(.invalidLength, "number does not fit \(length) bytes")
        }
        return out
    }
}

/// An owned `BN_CTX` for temporaries, from the secure heap so that intermediate values are cleared.
struct BigNumberContext: ~Copyable {
    let pointer: OpaquePointer

    /// The corresponding C function is `BN_CTX_secure_new`.
    init() throws(CardCryptoError) {
        guard let pointer = BN_CTX_secure_new() else { throw libcryptoError("BN_CTX_secure_new") }
        self.pointer = pointer
    }

    deinit { BN_CTX_free(pointer) }
}

/// An owned `EVP_PKEY`.
struct PKey: ~Copyable {
    let pointer: OpaquePointer

    init(owning pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    /// A key made from parameters, for the algorithm `name` (`"EC"`, `"RSA"`).
    ///
    /// The corresponding C functions are `EVP_PKEY_fromdata_init` and `EVP_PKEY_fromdata`.
    init(algorithm name: String, selection: Int32, parameters: borrowing ParameterList) throws(CardCryptoError) {
        let context = try PKeyContext(algorithm: name)
        guard EVP_PKEY_fromdata_init(context.pointer) == 1 else { throw libcryptoError("EVP_PKEY_fromdata_init") }
        var made: OpaquePointer?
        guard EVP_PKEY_fromdata(context.pointer, &made, selection, parameters.pointer) == 1, let made else {
            throw libcryptoError("EVP_PKEY_fromdata")
        }
        pointer = made
    }

    /// A number parameter of the key (`"priv"`, `"n"`, `"rsa-factor1"`).
    ///
    /// The corresponding C function is `EVP_PKEY_get_bn_param`.
    func number(_ name: String, secret: Bool) throws(CardCryptoError) -> BigNumber {
        var value: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pointer, name, &value) == 1, let value else {
            throw libcryptoError("reading key parameter \(name)")
        }
        return BigNumber(owning: value, secret: secret)
    }

    /// An octet-string parameter of the key (`"pub"`).
    ///
    /// The corresponding C function is `EVP_PKEY_get_octet_string_param`.
    func octets(_ name: String) throws(CardCryptoError) -> [UInt8] {
        var length = 0
        guard EVP_PKEY_get_octet_string_param(pointer, name, nil, 0, &length) == 1 else {
            throw libcryptoError("reading key parameter \(name)")
        }
        var out = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_get_octet_string_param(pointer, name, &out, length, &length) == 1 else {
            throw libcryptoError("reading key parameter \(name)")
        }
        return Array(out.prefix(length))
    }
}

/// An owned `EVP_PKEY_CTX`.
struct PKeyContext: ~Copyable {
    let pointer: OpaquePointer

    /// A context for an algorithm by name. The corresponding C function is `EVP_PKEY_CTX_new_from_name`.
    init(algorithm name: String) throws(CardCryptoError) {
        // The context keeps the name pointer, so it must be a lasting C string.
        guard let algorithm = ParameterName.cString(name), let pointer = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil)
        else {
            throw libcryptoError("EVP_PKEY_CTX_new_from_name(\(name))")
        }
        self.pointer = pointer
    }

    /// A context for operations with `key`. The corresponding C function is `EVP_PKEY_CTX_new_from_pkey`.
    init(key: borrowing PKey) throws(CardCryptoError) {
        guard let pointer = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else {
            throw libcryptoError("EVP_PKEY_CTX_new_from_pkey")
        }
        self.pointer = pointer
    }

    deinit { EVP_PKEY_CTX_free(pointer) }

    /// Generates a key after the caller set the context up.
    ///
    /// The corresponding C function is `EVP_PKEY_generate`.
    func generate() throws(CardCryptoError) -> PKey {
        var made: OpaquePointer?
        guard EVP_PKEY_generate(pointer, &made) == 1, let made else { throw libcryptoError("EVP_PKEY_generate") }
        return PKey(owning: made)
    }
}

/// An `OSSL_PARAM` list built with `OSSL_PARAM_BLD`; numbers pushed from the secure heap stay in it and are
/// cleared when the list is freed.
struct ParameterList: ~Copyable {
    let pointer: UnsafeMutablePointer<OSSL_PARAM>

    /// Builds a list; `body` pushes the entries. The numbers pushed must outlive this call (they are copied
    /// when the list is made); names and values are copied by the builder.
    init(_ body: (ParameterBuilder) throws(CardCryptoError) -> Void) throws(CardCryptoError) {
        guard let raw = OSSL_PARAM_BLD_new() else { throw libcryptoError("OSSL_PARAM_BLD_new") }
        let builder = ParameterBuilder(pointer: raw)
        defer {
            OSSL_PARAM_BLD_free(raw)
            builder.release()
        }
        try body(builder)
        guard let list = OSSL_PARAM_BLD_to_param(raw) else { throw libcryptoError("OSSL_PARAM_BLD_to_param") }
        pointer = list
    }

    /// The corresponding C function is `OSSL_PARAM_free`, which clears the secure part before freeing it.
    deinit { OSSL_PARAM_free(pointer) }
}

/// The algorithm and parameter names tokenpin uses, as C strings that live as long as the process: `OSSL_PARAM_BLD` and
/// the lists it makes keep the name pointers, so they must not be Swift's temporary bridged strings.
enum ParameterName {
    /// Interned C strings, one per name; never freed.
    private static let table: [String: Int] = {
        var table: [String: Int] = [:]
        for name in [
            "EC", "RSA", "group", "pub", "priv", "n", "e", "d", "rsa-factor1", "rsa-factor2", "rsa-exponent1",
            "rsa-exponent2", "rsa-coefficient1",
        ] {
            table[name] = Int(bitPattern: strdup(name))
        }
        return table
    }()

    /// The lasting C string for `name` (one of the table's), or nil.
    static func cString(_ name: String) -> UnsafePointer<CChar>? {
        table[name].flatMap { UnsafePointer(bitPattern: $0) }
    }
}

/// Pushes entries into an `OSSL_PARAM_BLD`; valid only inside `ParameterList.init`. The builder keeps
/// pointers to string and octet values until the list is made, so this copies them into buffers it owns and
/// wipes and frees them after.
final class ParameterBuilder {
    let pointer: OpaquePointer
    private var buffers: [UnsafeMutableRawBufferPointer] = []

    init(pointer: OpaquePointer) { self.pointer = pointer }

    /// A copy of `bytes` that lives until `release()`.
    private func keep(_ bytes: [UInt8]) -> UnsafeMutableRawBufferPointer {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
        buffers.append(buffer)
        return buffer
    }

    /// Wipes and frees the copies.
    func release() {
        for buffer in buffers {
            secureZero(buffer)
            buffer.deallocate()
        }
        buffers.removeAll()
    }

    private func key(_ name: String) throws(CardCryptoError) -> UnsafePointer<CChar> {
        guard let key = ParameterName.cString(name) else {
            throw CardCryptoError(.operationFailed, "unknown libcrypto parameter \(name)")
        }
        return key
    }

    /// The corresponding C function is `OSSL_PARAM_BLD_push_utf8_string`.
    func push(_ name: String, string: String) throws(CardCryptoError) {
        let value = keep(Array(string.utf8) + [0])
        let text = value.baseAddress!.assumingMemoryBound(to: CChar.self)
        guard OSSL_PARAM_BLD_push_utf8_string(pointer, try key(name), text, 0) == 1 else {
            throw libcryptoError("pushing \(name)")
        }
    }

    /// The corresponding C function is `OSSL_PARAM_BLD_push_octet_string`.
    func push(_ name: String, octets: [UInt8]) throws(CardCryptoError) {
        let value = keep(octets)
        guard OSSL_PARAM_BLD_push_octet_string(pointer, try key(name), value.baseAddress, octets.count) == 1 else {
            throw libcryptoError("pushing \(name)")
        }
    }

    /// The corresponding C function is `OSSL_PARAM_BLD_push_BN`; the number is copied when the list is made.
    func push(_ name: String, number: borrowing BigNumber) throws(CardCryptoError) {
        guard OSSL_PARAM_BLD_push_BN(pointer, try key(name), number.pointer) == 1 else {
            throw libcryptoError("pushing \(name)")
        }
    }
}
