import TokenpinCardCrypto
import TokenpinCore

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
