internal import CP11Kit

/// A PKCS#11 return value other than `CKR_OK`: what a module said went wrong, like swift-system's `Errno`.
///
/// Compare by value (`error == .pinIncorrect`). `description` is p11-kit's text for the code (`p11_kit_strerror`)
/// with the code's name; `name` is the `CKR_` constant as the PKCS#11 2.40 specification spells it, or the code in
/// hex for one outside it (vendor-defined codes from `0x80000000`).
public struct PKCS11Error: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The `CK_RV` the module returned.
    public let rawValue: UInt

    /// Wraps a `CK_RV`.
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// `CKR_CANCEL` (`0x1`): the function was cancelled (by the application's notification callback).
    public static let cancel = PKCS11Error(rawValue: 0x1)
    /// `CKR_HOST_MEMORY` (`0x2`): the module ran out of memory on the host.
    public static let hostMemory = PKCS11Error(rawValue: 0x2)
    /// `CKR_SLOT_ID_INVALID` (`0x3`): no such slot.
    public static let slotIDInvalid = PKCS11Error(rawValue: 0x3)
    /// `CKR_GENERAL_ERROR` (`0x5`): an unrecoverable error in the module.
    public static let generalError = PKCS11Error(rawValue: 0x5)
    /// `CKR_FUNCTION_FAILED` (`0x6`): the function could not be performed.
    public static let functionFailed = PKCS11Error(rawValue: 0x6)
    /// `CKR_ARGUMENTS_BAD` (`0x7`): an argument was not acceptable.
    public static let argumentsBad = PKCS11Error(rawValue: 0x7)
    /// `CKR_NO_EVENT` (`0x8`): no slot event.
    public static let noEvent = PKCS11Error(rawValue: 0x8)
    /// `CKR_CANT_LOCK` (`0xA`): the module cannot provide the locking asked for.
    public static let cannotLock = PKCS11Error(rawValue: 0xA)
    /// `CKR_ATTRIBUTE_READ_ONLY` (`0x10`): an attribute cannot be set.
    public static let attributeReadOnly = PKCS11Error(rawValue: 0x10)
    /// `CKR_ATTRIBUTE_SENSITIVE` (`0x11`): an attribute is sensitive and cannot be read.
    public static let attributeSensitive = PKCS11Error(rawValue: 0x11)
    /// `CKR_ATTRIBUTE_TYPE_INVALID` (`0x12`): the object has no such attribute.
    public static let attributeTypeInvalid = PKCS11Error(rawValue: 0x12)
    /// `CKR_ATTRIBUTE_VALUE_INVALID` (`0x13`): an attribute value is not acceptable.
    public static let attributeValueInvalid = PKCS11Error(rawValue: 0x13)
    /// `CKR_DATA_INVALID` (`0x20`): the input data is not acceptable.
    public static let dataInvalid = PKCS11Error(rawValue: 0x20)
    /// `CKR_DATA_LEN_RANGE` (`0x21`): the input data has the wrong length.
    public static let dataLengthRange = PKCS11Error(rawValue: 0x21)
    /// `CKR_DEVICE_ERROR` (`0x30`): the token or its reader failed.
    public static let deviceError = PKCS11Error(rawValue: 0x30)
    /// `CKR_DEVICE_MEMORY` (`0x31`): the token ran out of memory.
    public static let deviceMemory = PKCS11Error(rawValue: 0x31)
    /// `CKR_DEVICE_REMOVED` (`0x32`): the token was removed during the function.
    public static let deviceRemoved = PKCS11Error(rawValue: 0x32)
    /// `CKR_ENCRYPTED_DATA_INVALID` (`0x40`): the cryptogram is not valid (wrong padding, another key).
    public static let encryptedDataInvalid = PKCS11Error(rawValue: 0x40)
    /// `CKR_ENCRYPTED_DATA_LEN_RANGE` (`0x41`): the cryptogram has the wrong length.
    public static let encryptedDataLengthRange = PKCS11Error(rawValue: 0x41)
    /// `CKR_FUNCTION_CANCELED` (`0x50`): the function was cancelled.
    public static let functionCanceled = PKCS11Error(rawValue: 0x50)
    /// `CKR_FUNCTION_NOT_SUPPORTED` (`0x54`): the module does not support the function.
    public static let functionNotSupported = PKCS11Error(rawValue: 0x54)
    /// `CKR_KEY_HANDLE_INVALID` (`0x60`): the key handle is not valid.
    public static let keyHandleInvalid = PKCS11Error(rawValue: 0x60)
    /// `CKR_KEY_SIZE_RANGE` (`0x62`): the key's size is outside what the mechanism takes.
    public static let keySizeRange = PKCS11Error(rawValue: 0x62)
    /// `CKR_KEY_TYPE_INCONSISTENT` (`0x63`): the key is not of the type the mechanism takes.
    public static let keyTypeInconsistent = PKCS11Error(rawValue: 0x63)
    /// `CKR_KEY_FUNCTION_NOT_PERMITTED` (`0x68`): the key's attributes do not allow this use.
    public static let keyFunctionNotPermitted = PKCS11Error(rawValue: 0x68)
    /// `CKR_MECHANISM_INVALID` (`0x70`): the token does not support the mechanism.
    public static let mechanismInvalid = PKCS11Error(rawValue: 0x70)
    /// `CKR_MECHANISM_PARAM_INVALID` (`0x71`): the mechanism's parameters are not acceptable.
    public static let mechanismParameterInvalid = PKCS11Error(rawValue: 0x71)
    /// `CKR_OBJECT_HANDLE_INVALID` (`0x82`): the object handle is not valid.
    public static let objectHandleInvalid = PKCS11Error(rawValue: 0x82)
    /// `CKR_OPERATION_ACTIVE` (`0x90`): another operation is active in the session.
    public static let operationActive = PKCS11Error(rawValue: 0x90)
    /// `CKR_OPERATION_NOT_INITIALIZED` (`0x91`): no operation of this kind is active in the session.
    public static let operationNotInitialized = PKCS11Error(rawValue: 0x91)
    /// `CKR_PIN_INCORRECT` (`0xA0`): the PIN is wrong.
    public static let pinIncorrect = PKCS11Error(rawValue: 0xA0)
    /// `CKR_PIN_INVALID` (`0xA1`): the PIN has characters the token does not take.
    public static let pinInvalid = PKCS11Error(rawValue: 0xA1)
    /// `CKR_PIN_LEN_RANGE` (`0xA2`): the PIN is too long or too short.
    public static let pinLengthRange = PKCS11Error(rawValue: 0xA2)
    /// `CKR_PIN_EXPIRED` (`0xA3`): the PIN has expired.
    public static let pinExpired = PKCS11Error(rawValue: 0xA3)
    /// `CKR_PIN_LOCKED` (`0xA4`): the PIN is locked (blocked).
    public static let pinLocked = PKCS11Error(rawValue: 0xA4)
    /// `CKR_SESSION_CLOSED` (`0xB0`): the session was closed during the function.
    public static let sessionClosed = PKCS11Error(rawValue: 0xB0)
    /// `CKR_SESSION_COUNT` (`0xB1`): the token has too many sessions open.
    public static let sessionCount = PKCS11Error(rawValue: 0xB1)
    /// `CKR_SESSION_HANDLE_INVALID` (`0xB3`): the session handle is not valid.
    public static let sessionHandleInvalid = PKCS11Error(rawValue: 0xB3)
    /// `CKR_SESSION_PARALLEL_NOT_SUPPORTED` (`0xB4`): the token does not support parallel sessions.
    public static let sessionParallelNotSupported = PKCS11Error(rawValue: 0xB4)
    /// `CKR_SESSION_READ_ONLY` (`0xB5`): the session is read-only.
    public static let sessionReadOnly = PKCS11Error(rawValue: 0xB5)
    /// `CKR_TEMPLATE_INCOMPLETE` (`0xD0`): the template lacks attributes the object needs.
    public static let templateIncomplete = PKCS11Error(rawValue: 0xD0)
    /// `CKR_TEMPLATE_INCONSISTENT` (`0xD1`): the template's attributes conflict.
    public static let templateInconsistent = PKCS11Error(rawValue: 0xD1)
    /// `CKR_TOKEN_NOT_PRESENT` (`0xE0`): no token in the slot.
    public static let tokenNotPresent = PKCS11Error(rawValue: 0xE0)
    /// `CKR_TOKEN_NOT_RECOGNIZED` (`0xE1`): the module does not recognize the token.
    public static let tokenNotRecognized = PKCS11Error(rawValue: 0xE1)
    /// `CKR_TOKEN_WRITE_PROTECTED` (`0xE2`): the token is write-protected.
    public static let tokenWriteProtected = PKCS11Error(rawValue: 0xE2)
    /// `CKR_USER_ALREADY_LOGGED_IN` (`0x100`): the user is already logged in.
    public static let userAlreadyLoggedIn = PKCS11Error(rawValue: 0x100)
    /// `CKR_USER_NOT_LOGGED_IN` (`0x101`): the user is not logged in.
    public static let userNotLoggedIn = PKCS11Error(rawValue: 0x101)
    /// `CKR_USER_PIN_NOT_INITIALIZED` (`0x102`): the token's user PIN is not set.
    public static let userPINNotInitialized = PKCS11Error(rawValue: 0x102)
    /// `CKR_USER_TYPE_INVALID` (`0x103`): the user type is not valid.
    public static let userTypeInvalid = PKCS11Error(rawValue: 0x103)
    /// `CKR_BUFFER_TOO_SMALL` (`0x150`): the output buffer is too small.
    public static let bufferTooSmall = PKCS11Error(rawValue: 0x150)
    /// `CKR_CRYPTOKI_NOT_INITIALIZED` (`0x190`): the module is not initialized.
    public static let cryptokiNotInitialized = PKCS11Error(rawValue: 0x190)
    /// `CKR_CRYPTOKI_ALREADY_INITIALIZED` (`0x191`): the module was already initialized.
    public static let cryptokiAlreadyInitialized = PKCS11Error(rawValue: 0x191)
    /// `CKR_FUNCTION_REJECTED` (`0x200`): the token or the user rejected the request.
    public static let functionRejected = PKCS11Error(rawValue: 0x200)

    /// The specification's name of every code above, for `name`.
    private static let names: [UInt: String] = [
        0x1: "CKR_CANCEL",
        0x2: "CKR_HOST_MEMORY",
        0x3: "CKR_SLOT_ID_INVALID",
        0x5: "CKR_GENERAL_ERROR",
        0x6: "CKR_FUNCTION_FAILED",
        0x7: "CKR_ARGUMENTS_BAD",
        0x8: "CKR_NO_EVENT",
        0xA: "CKR_CANT_LOCK",
        0x10: "CKR_ATTRIBUTE_READ_ONLY",
        0x11: "CKR_ATTRIBUTE_SENSITIVE",
        0x12: "CKR_ATTRIBUTE_TYPE_INVALID",
        0x13: "CKR_ATTRIBUTE_VALUE_INVALID",
        0x20: "CKR_DATA_INVALID",
        0x21: "CKR_DATA_LEN_RANGE",
        0x30: "CKR_DEVICE_ERROR",
        0x31: "CKR_DEVICE_MEMORY",
        0x32: "CKR_DEVICE_REMOVED",
        0x40: "CKR_ENCRYPTED_DATA_INVALID",
        0x41: "CKR_ENCRYPTED_DATA_LEN_RANGE",
        0x50: "CKR_FUNCTION_CANCELED",
        0x54: "CKR_FUNCTION_NOT_SUPPORTED",
        0x60: "CKR_KEY_HANDLE_INVALID",
        0x62: "CKR_KEY_SIZE_RANGE",
        0x63: "CKR_KEY_TYPE_INCONSISTENT",
        0x68: "CKR_KEY_FUNCTION_NOT_PERMITTED",
        0x70: "CKR_MECHANISM_INVALID",
        0x71: "CKR_MECHANISM_PARAM_INVALID",
        0x82: "CKR_OBJECT_HANDLE_INVALID",
        0x90: "CKR_OPERATION_ACTIVE",
        0x91: "CKR_OPERATION_NOT_INITIALIZED",
        0xA0: "CKR_PIN_INCORRECT",
        0xA1: "CKR_PIN_INVALID",
        0xA2: "CKR_PIN_LEN_RANGE",
        0xA3: "CKR_PIN_EXPIRED",
        0xA4: "CKR_PIN_LOCKED",
        0xB0: "CKR_SESSION_CLOSED",
        0xB1: "CKR_SESSION_COUNT",
        0xB3: "CKR_SESSION_HANDLE_INVALID",
        0xB4: "CKR_SESSION_PARALLEL_NOT_SUPPORTED",
        0xB5: "CKR_SESSION_READ_ONLY",
        0xD0: "CKR_TEMPLATE_INCOMPLETE",
        0xD1: "CKR_TEMPLATE_INCONSISTENT",
        0xE0: "CKR_TOKEN_NOT_PRESENT",
        0xE1: "CKR_TOKEN_NOT_RECOGNIZED",
        0xE2: "CKR_TOKEN_WRITE_PROTECTED",
        0x100: "CKR_USER_ALREADY_LOGGED_IN",
        0x101: "CKR_USER_NOT_LOGGED_IN",
        0x102: "CKR_USER_PIN_NOT_INITIALIZED",
        0x103: "CKR_USER_TYPE_INVALID",
        0x150: "CKR_BUFFER_TOO_SMALL",
        0x190: "CKR_CRYPTOKI_NOT_INITIALIZED",
        0x191: "CKR_CRYPTOKI_ALREADY_INITIALIZED",
        0x200: "CKR_FUNCTION_REJECTED",
    ]

    /// The `CKR_` name of the code, or `CKR_VENDOR_DEFINED+0x…` / the code in hex for one tokenpin does not name.
    public var name: String {
        if let name = Self.names[rawValue] { return name }
        if rawValue >= 0x8000_0000 { return "CKR_VENDOR_DEFINED+0x" + String(rawValue - 0x8000_0000, radix: 16) }
        return "CK_RV 0x" + String(rawValue, radix: 16)
    }

    /// p11-kit's text for the code, then its name: `The PIN is incorrect (CKR_PIN_INCORRECT)`.
    ///
    /// The corresponding C function is `p11_kit_strerror`.
    public var description: String {
        let text = p11_kit_strerror(CK_RV(rawValue)).map { String(cString: $0) } ?? "Unknown error"
        return "\(text) (\(name))"
    }

    /// Whether the code says the PIN was wrong in a way that spends a try: `CKR_PIN_INCORRECT`, and
    /// `CKR_PIN_LEN_RANGE` (which tokens return for a PIN of a length they never take; as systemd, tokenpin counts
    /// it as a wrong PIN).
    public var isWrongPIN: Bool { self == .pinIncorrect || self == .pinLengthRange }

    /// Whether the code says the token went away or cannot be reached (removed, not present, a device failure).
    public var isTokenGone: Bool {
        self == .deviceRemoved || self == .tokenNotPresent || self == .deviceError || self == .sessionClosed
            || self == .sessionHandleInvalid
    }
}
