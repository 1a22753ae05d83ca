import Testing
import TokenpinCardCrypto
import TokenpinCore
import TokenpinSystem
import TokenpinTestSupport

@testable import TokenpinPKCS11

/// The helper protocol's frames: every reply and request round-trips, every prefix of a frame fails cleanly,
/// trailing bytes are refused, and a key whose public half does not check is refused on the client's side.
@Suite("The helper's wire format")
struct WireTests {
    static let token = PKCS11TokenInfo(
        module: "softhsm2", moduleIndex: 0, slot: 0x4420_0001, slotDescription: "SoftHSM slot ID 0x1",
        isHardware: false, isRemovable: false, label: "ci", manufacturer: "SoftHSM project", model: "SoftHSM v2",
        serial: "152be2f9448b2d7e", flags: [.loginRequired, .userPINInitialized, .userPINCountLow], pinLength: 4...255,
        uri: "pkcs11:model=SoftHSM%20v2;manufacturer=SoftHSM%20project;serial=152be2f9448b2d7e;token=ci")

    static func key() throws -> PKCS11Key {
        let pair = try EllipticCurveDH.generateKeyPair(on: .nistP256)
        return PKCS11Key(
            token: token, id: [0x01], label: "k", algorithm: .ecdh(.nistP256), publicKey: .ec(point: pair.publicPoint),
            privateKeySeen: false, uri: token.uri + ";id=%01;object=k;type=private")
    }

    /// The body of a frame (what `HelperWire.receive` hands the decoder), through a socket pair.
    static func body(_ writer: consuming WireWriter) throws -> [UInt8] {
        let pair = try SocketPair.stream()
        try writer.send(on: pair.first)
        let frame = try HelperWire.receive(from: pair.second, deadline: MonotonicClock.milliseconds + 1000)
        return bytes(frame)
    }

    @Test("a listing round-trips, and every prefix of it, and any trailing byte, is refused")
    func inventoryFrame() throws {
        let key = try Self.key()
        let inventory = PKCS11Inventory(
            listings: [
                PKCS11TokenListing(token: Self.token, keys: [key], matches: [true], unusable: ["RSA key (id 02)"])
            ],
            problems: ["opensc-pkcs11: C_GetSlotList failed"])
        let frame = try Self.body(HelperReply.inventory(inventory, calls: 12).encode())
        let reply = try HelperReply.decode(secretBytes(frame))
        switch consume reply {
        case .inventory(let decoded, let calls): #expect(decoded == inventory && calls == 12)
        default: Issue.record("not an inventory")
        }
        for length in 0..<frame.count {
            #expect(throws: HelperWireError.self) {
                _ = try HelperReply.decode(secretBytes(Array(frame.prefix(length))))
            }
        }
        do {
            _ = try HelperReply.decode(secretBytes(frame + [0]))
            Issue.record("a trailing byte was taken")
        } catch {
            #expect(error.code == .trailingBytes)
        }
    }

    @Test("a request with a PIN round-trips; its prefixes are refused")
    func deriveRequest() throws {
        let key = try Self.key()
        let point = try EllipticCurveDH.generateKeyPair(on: .nistP256).publicPoint
        let request = HelperRequest.derive(
            PKCS11KeyReference(key), curve: .nistP256, pin: secret("123456"), peerPoint: point)
        let frame = try Self.body(request.encode())
        let decodedRequest = try HelperRequest.decode(secretBytes(frame))
        switch consume decodedRequest {
        case .derive(let reference, let curve, let pin, let decoded):
            #expect(reference == PKCS11KeyReference(key) && curve == .nistP256 && decoded == point)
            switch consume pin {
            case .some(let pin): #expect(text(pin) == "123456")
            case .none: Issue.record("the PIN was lost")
            }
        default:
            Issue.record("not a derive request")
        }
        for length in 0..<frame.count {
            #expect(throws: HelperWireError.self) {
                _ = try HelperRequest.decode(secretBytes(Array(frame.prefix(length))))
            }
        }
    }

    @Test("a key whose point is off its curve is refused by the client, whatever the helper says")
    func offCurveKey() throws {
        var key = try Self.key()
        guard case .ec(var point) = key.publicKey else { return }
        point[64] ^= 1
        key.publicKey = .ec(point: point)
        let frame = try Self.body(HelperReply.key(key, calls: 1).encode())
        do {
            _ = try HelperReply.decode(secretBytes(frame))
            Issue.record("a point off the curve was taken")
        } catch {
            #expect(error.code == .unknownValue && error.detail.contains("not on nistP256"))
        }
    }

    @Test(
        "every failure round-trips",
        arguments: [
            PKCS11TokenError.wrongPIN(.finalTry), .pinLocked, .noToken("none"), .ambiguous(["pkcs11:a", "pkcs11:b"]),
            .unusable("u"), .module(.deviceRemoved, function: "C_Login", module: "opensc-pkcs11"), .malformed("m"),
            .notAnswering("n"), .helperFailed("h"), .tokenChanged("t"), .invalidRequest("i"),
        ])
    func failures(error: PKCS11TokenError) throws {
        let frame = try Self.body(HelperReply.failure(error, calls: 3).encode())
        let reply = try HelperReply.decode(secretBytes(frame))
        switch consume reply {
        case .failure(let decoded, let calls): #expect(decoded == error && calls == 3)
        default: Issue.record("not a failure")
        }
    }

    @Test("a frame longer than the limit is refused before it is read")
    func frameLimit() throws {
        let pair = try SocketPair.stream()
        try pair.first.sendAll([0x7F, 0xFF, 0xFF, 0xFF])
        do {
            _ = try HelperWire.receive(from: pair.second, deadline: MonotonicClock.milliseconds + 1000)
            Issue.record("a 2 GiB frame was taken")
        } catch {
            #expect(error.code == .tooLong)
        }
    }
}

/// PKCS#11's own encodings and names.
@Suite("PKCS#11 values")
struct PKCS11ValueTests {
    @Test("CK_RV codes carry p11-kit's text and their name")
    func errors() {
        #expect(PKCS11Error.pinIncorrect.description.contains("CKR_PIN_INCORRECT"))
        #expect(PKCS11Error.pinIncorrect.rawValue == 0xA0)
        #expect(PKCS11Error.pinIncorrect.isWrongPIN && PKCS11Error.pinLengthRange.isWrongPIN)
        #expect(!PKCS11Error.pinLocked.isWrongPIN)
        #expect(PKCS11Error(rawValue: 0x8000_0042).name == "CKR_VENDOR_DEFINED+0x42")
        #expect(PKCS11Error.deviceRemoved.isTokenGone)
    }

    @Test("the tries hint follows the flags: locked, then final try, then low")
    func tries() {
        #expect(PKCS11PINTries([.userPINCountLow]) == .low)
        #expect(PKCS11PINTries([.userPINCountLow, .userPINFinalTry]) == .finalTry)
        #expect(PKCS11PINTries([.userPINFinalTry, .userPINLocked]) == .locked)
        #expect(PKCS11PINTries([.loginRequired]) == .unknown)
    }

    @Test("CKA_EC_POINT in both forms, and every other length refused", arguments: WeierstrassCurve.allCases)
    func points(curve: WeierstrassCurve) throws {
        let point = try EllipticCurveDH.generateKeyPair(on: curve).publicPoint
        let length = point.count
        let der = [0x04] + (length < 128 ? [UInt8(length)] : [0x81, UInt8(length)]) + point
        #expect(try PKCS11KeyAttributes.point(point, on: curve) == point)
        #expect(try PKCS11KeyAttributes.point(der, on: curve) == point)
        for bad in [Array(der.dropLast()), der + [0], Array(point.dropLast()), [0x04, 0x00]] {
            #expect(throws: PKCS11ModuleError.self) { _ = try PKCS11KeyAttributes.point(bad, on: curve) }
        }
    }

    @Test("EC parameters name a curve only by its exact OID")
    func curves() throws {
        for (curve, oid) in PKCS11KeyAttributes.curveParameters {
            #expect(try PKCS11KeyAttributes.curve(parameters: oid) == curve)
            #expect(throws: PKCS11ModuleError.self) { _ = try PKCS11KeyAttributes.curve(parameters: oid + [0]) }
        }
        // A printable-string curve name (allowed by PKCS#11, used by nobody) is not taken.
        #expect(throws: PKCS11ModuleError.self) {
            _ = try PKCS11KeyAttributes.curve(parameters: [0x13, 0x0A] + Array("prime256v1".utf8))
        }
    }

    @Test("token strings lose their padding and any control character")
    func tokenText() {
        #expect(PKCS11KeyAttributes.text(Array("ci    ".utf8)) == "ci")
        #expect(PKCS11KeyAttributes.text([0x61, 0x0A, 0x1B, 0x62, 0x20, 0x00]) == "ab")
        #expect(PKCS11KeyAttributes.text([0xFF, 0x41]) == "\u{FFFD}A")
    }

    @Test("p11-kit formats a key's URI with its token, id, label and type")
    func uriFormat() throws {
        let uri = try PKCS11URI(parsing: "pkcs11:token=ci;id=%01%02;object=my%20key;type=private")
        #expect(uri.attribute(PKCS11Constant.idAttribute) == [0x01, 0x02])
        #expect(uri.attribute(PKCS11Constant.labelAttribute) == Array("my key".utf8))
        #expect(throws: PKCS11TokenError.self) {
            _ = try PKCS11URI(parsing: "pkcs11:" + String(repeating: "a", count: 5000))
        }
    }
}
