internal import CP11Kit
import TokenpinSystem

/// An RFC 7512 PKCS#11 URI as p11-kit parses and matches it (`pkcs11:token=ci;id=%01;type=private`).
///
/// Non-copyable: the value owns p11-kit's parsed URI and frees it when it goes. Matching is p11-kit's own, field by
/// field (a field the URI does not name matches anything), so a URI means here what it means to systemd, sssd, gnutls
/// and OpenSSL's pkcs11 provider.
struct PKCS11URI: ~Copyable {
    private let uri: OpaquePointer

    /// The longest URI taken.
    static let maximumLength = 4096

    /// Parses `text`, refusing what tokenpin cannot honour: a PIN in the URI (`pin-value`, `pin-source`: a PIN
    /// never travels in a string that lands in configuration or argv), attributes p11-kit does not know (they would
    /// match nothing), and an object of a type other than a private key.
    ///
    /// The corresponding C function is `p11_kit_uri_parse`.
    init(parsing text: String) throws(PKCS11TokenError) {
        guard text.utf8.count <= Self.maximumLength else {
            throw .invalidRequest("the PKCS#11 URI is longer than \(Self.maximumLength) bytes")
        }
        guard let uri = p11_kit_uri_new() else { throw .invalidRequest("p11-kit could not allocate a URI") }
        let result = p11_kit_uri_parse(text, P11_KIT_URI_FOR_ANY, uri)
        guard result == P11_KIT_URI_OK.rawValue else {
            p11_kit_uri_free(uri)
            let message = p11_kit_uri_message(result).map { String(cString: $0) } ?? "it does not parse"
            throw .invalidRequest("`\(text)` is not a PKCS#11 URI (RFC 7512): \(message)")
        }
        var refusal: String?
        if p11_kit_uri_get_pin_value(uri) != nil || p11_kit_uri_get_pin_source(uri) != nil {
            refusal = "a PKCS#11 URI for tokenpin must not carry a PIN (pin-value, pin-source)"
        } else if p11_kit_uri_any_unrecognized(uri) != 0 {
            refusal = "`\(text)` has attributes p11-kit does not know, which would match no token"
        } else if let objectClass = Self.attribute(PKCS11Constant.classAttribute, of: uri).flatMap(
            PKCS11Attribute.ulong(from:)), objectClass != PKCS11Constant.privateKeyClass
        {
            refusal = "`\(text)` names an object that is not a private key (type=private)"
        }
        if let refusal {
            p11_kit_uri_free(uri)
            throw .invalidRequest(refusal)
        }
        self.uri = uri
    }

    deinit { p11_kit_uri_free(uri) }

    /// The value of an object attribute the URI names (`id`, `object`, `type`), or nil.
    ///
    /// The corresponding C function is `p11_kit_uri_get_attribute`.
    func attribute(_ type: UInt) -> [UInt8]? { Self.attribute(type, of: uri) }

    private static func attribute(_ type: UInt, of uri: OpaquePointer) -> [UInt8]? {
        guard let attribute = p11_kit_uri_get_attribute(uri, CK_ATTRIBUTE_TYPE(type)) else { return nil }
        guard let value = attribute.pointee.pValue, attribute.pointee.ulValueLen != PKCS11Constant.unavailable else {
            return []
        }
        return Array(UnsafeRawBufferPointer(start: value, count: Int(attribute.pointee.ulValueLen)))
    }

    /// Whether the URI's module fields (`library-manufacturer`, `library-description`, `library-version`, and the
    /// query's `module-name`, `module-path`) fit the module.
    ///
    /// The corresponding C functions are `p11_kit_uri_match_module_info`, `p11_kit_uri_get_module_name` and
    /// `p11_kit_uri_get_module_path`.
    func matches(module info: CK_INFO, name: String, path: String?) -> Bool {
        var info = info
        guard p11_kit_uri_match_module_info(uri, &info) == 1 else { return false }
        if let wanted = p11_kit_uri_get_module_name(uri).map({ String(cString: $0) }) {
            let base = path.map { String($0.split(separator: "/").last ?? "") } ?? ""
            let stem = base.hasSuffix(".so") ? String(base.dropLast(3)) : base
            guard wanted == name || wanted == base || wanted == stem else { return false }
        }
        if let wanted = p11_kit_uri_get_module_path(uri).map({ String(cString: $0) }) {
            guard wanted == path else { return false }
        }
        return true
    }

    /// Whether the URI's slot fields (`slot-description`, `slot-manufacturer`, `slot-id`) fit the slot.
    ///
    /// The corresponding C functions are `p11_kit_uri_get_slot_id` and `p11_kit_uri_match_slot_info`.
    func matches(slot info: CK_SLOT_INFO, id: UInt) -> Bool {
        let wanted = p11_kit_uri_get_slot_id(uri)
        if wanted != CK_SLOT_ID(bitPattern: -1), wanted != CK_SLOT_ID(id) { return false }
        var info = info
        return p11_kit_uri_match_slot_info(uri, &info) == 1
    }

    /// Whether the URI's token fields (`token`, `manufacturer`, `model`, `serial`) fit the token.
    ///
    /// The corresponding C function is `p11_kit_uri_match_token_info`.
    func matches(token info: CK_TOKEN_INFO) -> Bool {
        var info = info
        return p11_kit_uri_match_token_info(uri, &info) == 1
    }

    /// Whether the URI's object fields (`id`, `object`, `type`) fit an object with `attributes`.
    ///
    /// The corresponding C function is `p11_kit_uri_match_attributes`.
    func matches(attributes: [PKCS11Attribute]) -> Bool {
        PKCS11Attribute.withTemplate(attributes) { template, count in
            p11_kit_uri_match_attributes(uri, template, count) == 1
        }
    }

    /// The URI of a token: `pkcs11:model=…;manufacturer=…;serial=…;token=…`.
    ///
    /// The corresponding C functions are `p11_kit_uri_get_token_info` and `p11_kit_uri_format`.
    static func format(token info: CK_TOKEN_INFO) -> String {
        format(token: info, object: [])
    }

    /// The URI of a private key on a token: the token's fields, then `id`, `object` (its label) and `type=private`.
    ///
    /// The corresponding C functions are `p11_kit_uri_set_attribute` and `p11_kit_uri_format`.
    static func format(token info: CK_TOKEN_INFO, keyID: [UInt8], label: String) -> String {
        var attributes = [
            PKCS11Attribute.bytes(PKCS11Constant.idAttribute, keyID),
            PKCS11Attribute.ulong(PKCS11Constant.classAttribute, PKCS11Constant.privateKeyClass),
        ]
        if !label.isEmpty { attributes.append(.bytes(PKCS11Constant.labelAttribute, Array(label.utf8))) }
        return format(token: info, object: attributes)
    }

    private static func format(token info: CK_TOKEN_INFO, object: [PKCS11Attribute]) -> String {
        guard let uri = p11_kit_uri_new() else { return "pkcs11:" }
        defer { p11_kit_uri_free(uri) }
        p11_kit_uri_get_token_info(uri).pointee = info
        PKCS11Attribute.withTemplate(object) { template, count in
            for index in 0..<Int(count) { _ = p11_kit_uri_set_attribute(uri, template! + index) }
        }
        var text: UnsafeMutablePointer<CChar>?
        let type = object.isEmpty ? P11_KIT_URI_FOR_TOKEN : P11_KIT_URI_FOR_OBJECT_ON_TOKEN
        guard p11_kit_uri_format(uri, P11KitUriType(type.rawValue), &text) == P11_KIT_URI_OK.rawValue else {
            return "pkcs11:"
        }
        return String(takingMallocated: text) ?? "pkcs11:"
    }
}
