internal import CP11Kit

/// A PKCS#11 return value other than `CKR_OK`: what a module said went wrong, like swift-system's `Errno`.
///
/// Compare by value (`error == .pinIncorrect`). `description` is p11-kit's text for the code (`p11_kit_strerror`)
/// with the code's name; `name` is the `CKR_` constant as the PKCS#11 2.40 specification spells it, or the code in
/// hex for one outside it (vendor-defined codes from `0x80000000`).
package struct PKCS11Error: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The `CK_RV` the module returned.
    package let rawValue: UInt

    /// Wraps a `CK_RV`.
    package init(rawValue: UInt) { self.rawValue = rawValue }

    /// `CKR_CANCEL` (`0x1`): the function was cancelled (by the application's notification callback).
    package static let cancel = PKCS11Error(rawValue: 0x1)
    /// `CKR_HOST_MEMORY` (`0x2`): the module ran out of memory on the host.
    package static let hostMemory = PKCS11Error(rawValue: 0x2)
    /// `CKR_SLOT_ID_INVALID` (`0x3`): no such slot.
    package static let slotIDInvalid = PKCS11Error(rawValue: 0x3)
    /// `CKR_GENERAL_ERROR` (`0x5`): an unrecoverable error in the module.
    package static let generalError = PKCS11Error(rawValue: 0x5)
    /// `CKR_FUNCTION_FAILED` (`0x6`): the function could not be performed.
    package static let functionFailed = PKCS11Error(rawValue: 0x6)
    /// `CKR_ARGUMENTS_BAD` (`0x7`): an argument was not acceptable.
    package static let argumentsBad = PKCS11Error(rawValue: 0x7)
    /// `CKR_NO_EVENT` (`0x8`): no slot event.
    package static let noEvent = PKCS11Error(rawValue: 0x8)
    /// `CKR_CANT_LOCK` (`0xA`): the module cannot provide the locking asked for.
    package static let cannotLock = PKCS11Error(rawValue: 0xA)
    /// `CKR_ATTRIBUTE_READ_ONLY` (`0x10`): an attribute cannot be set.
    package static let attributeReadOnly = PKCS11Error(rawValue: 0x10)
    /// `CKR_ATTRIBUTE_SENSITIVE` (`0x11`): an attribute is sensitive and cannot be read.
    package static let attributeSensitive = PKCS11Error(rawValue: 0x11)
    /// `CKR_ATTRIBUTE_TYPE_INVALID` (`0x12`): the object has no such attribute.
    package static let attributeTypeInvalid = PKCS11Error(rawValue: 0x12)
    /// `CKR_ATTRIBUTE_VALUE_INVALID` (`0x13`): an attribute value is not acceptable.
    package static let attributeValueInvalid = PKCS11Error(rawValue: 0x13)
    /// `CKR_DATA_INVALID` (`0x20`): the input data is not acceptable.
    package static let dataInvalid = PKCS11Error(rawValue: 0x20)
    /// `CKR_DATA_LEN_RANGE` (`0x21`): the input data has the wrong length.
    package static let dataLengthRange = PKCS11Error(rawValue: 0x21)
    /// `CKR_DEVICE_ERROR` (`0x30`): the token or its reader failed.
    package static let deviceError = PKCS11Error(rawValue: 0x30)
    /// `CKR_DEVICE_MEMORY` (`0x31`): the token ran out of memory.
    package static let deviceMemory = PKCS11Error(rawValue: 0x31)
    /// `CKR_DEVICE_REMOVED` (`0x32`): the token was removed during the function.
    package static let deviceRemoved = PKCS11Error(rawValue: 0x32)
    /// `CKR_ENCRYPTED_DATA_INVALID` (`0x40`): the cryptogram is not valid (wrong padding, another key).
    package static let encryptedDataInvalid = PKCS11Error(rawValue: 0x40)
    /// `CKR_ENCRYPTED_DATA_LEN_RANGE` (`0x41`): the cryptogram has the wrong length.
    package static let encryptedDataLengthRange = PKCS11Error(rawValue: 0x41)
    /// `CKR_FUNCTION_CANCELED` (`0x50`): the function was cancelled.
    package static let functionCanceled = PKCS11Error(rawValue: 0x50)
    /// `CKR_FUNCTION_NOT_SUPPORTED` (`0x54`): the module does not support the function.
    package static let functionNotSupported = PKCS11Error(rawValue: 0x54)
    /// `CKR_KEY_HANDLE_INVALID` (`0x60`): the key handle is not valid.
    package static let keyHandleInvalid = PKCS11Error(rawValue: 0x60)
    /// `CKR_KEY_SIZE_RANGE` (`0x62`): the key's size is outside what the mechanism takes.
    package static let keySizeRange = PKCS11Error(rawValue: 0x62)
    /// `CKR_KEY_TYPE_INCONSISTENT` (`0x63`): the key is not of the type the mechanism takes.
    package static let keyTypeInconsistent = PKCS11Error(rawValue: 0x63)
    /// `CKR_KEY_FUNCTION_NOT_PERMITTED` (`0x68`): the key's attributes do not allow this use.
    package static let keyFunctionNotPermitted = PKCS11Error(rawValue: 0x68)
    /// `CKR_MECHANISM_INVALID` (`0x70`): the token does not support the mechanism.
    package static let mechanismInvalid = PKCS11Error(rawValue: 0x70)
    /// `CKR_MECHANISM_PARAM_INVALID` (`0x71`): the mechanism's parameters are not acceptable.
    package static let mechanismParameterInvalid = PKCS11Error(rawValue: 0x71)
    /// `CKR_OBJECT_HANDLE_INVALID` (`0x82`): the object handle is not valid.
    package static let objectHandleInvalid = PKCS11Error(rawValue: 0x82)
    /// `CKR_OPERATION_ACTIVE` (`0x90`): another operation is active in the session.
    package static let operationActive = PKCS11Error(rawValue: 0x90)
    /// `CKR_OPERATION_NOT_INITIALIZED` (`0x91`): no operation of this kind is active in the session.
    package static let operationNotInitialized = PKCS11Error(rawValue: 0x91)
    /// `CKR_PIN_INCORRECT` (`0xA0`): the PIN is wrong.
    package static let pinIncorrect = PKCS11Error(rawValue: 0xA0)
    /// `CKR_PIN_INVALID` (`0xA1`): the PIN has characters the token does not take.
    package static let pinInvalid = PKCS11Error(rawValue: 0xA1)
    /// `CKR_PIN_LEN_RANGE` (`0xA2`): the PIN is too long or too short.
    package static let pinLengthRange = PKCS11Error(rawValue: 0xA2)
    /// `CKR_PIN_EXPIRED` (`0xA3`): the PIN has expired.
    package static let pinExpired = PKCS11Error(rawValue: 0xA3)
    /// `CKR_PIN_LOCKED` (`0xA4`): the PIN is locked (blocked).
    package static let pinLocked = PKCS11Error(rawValue: 0xA4)
    /// `CKR_SESSION_CLOSED` (`0xB0`): the session was closed during the function.
    package static let sessionClosed = PKCS11Error(rawValue: 0xB0)
    /// `CKR_SESSION_COUNT` (`0xB1`): the token has too many sessions open.
    package static let sessionCount = PKCS11Error(rawValue: 0xB1)
    /// `CKR_SESSION_HANDLE_INVALID` (`0xB3`): the session handle is not valid.
    package static let sessionHandleInvalid = PKCS11Error(rawValue: 0xB3)
    /// `CKR_SESSION_PARALLEL_NOT_SUPPORTED` (`0xB4`): the token does not support parallel sessions.
    package static let sessionParallelNotSupported = PKCS11Error(rawValue: 0xB4)
    /// `CKR_SESSION_READ_ONLY` (`0xB5`): the session is read-only.
    package static let sessionReadOnly = PKCS11Error(rawValue: 0xB5)
    /// `CKR_TEMPLATE_INCOMPLETE` (`0xD0`): the template lacks attributes the object needs.
    package static let templateIncomplete = PKCS11Error(rawValue: 0xD0)
    /// `CKR_TEMPLATE_INCONSISTENT` (`0xD1`): the template's attributes conflict.
    package static let templateInconsistent = PKCS11Error(rawValue: 0xD1)
    /// `CKR_TOKEN_NOT_PRESENT` (`0xE0`): no token in the slot.
    package static let tokenNotPresent = PKCS11Error(rawValue: 0xE0)
    /// `CKR_TOKEN_NOT_RECOGNIZED` (`0xE1`): the module does not recognize the token.
    package static let tokenNotRecognized = PKCS11Error(rawValue: 0xE1)
    /// `CKR_TOKEN_WRITE_PROTECTED` (`0xE2`): the token is write-protected.
    package static let tokenWriteProtected = PKCS11Error(rawValue: 0xE2)
    /// `CKR_USER_ALREADY_LOGGED_IN` (`0x100`): the user is already logged in.
    package static let userAlreadyLoggedIn = PKCS11Error(rawValue: 0x100)
    /// `CKR_USER_NOT_LOGGED_IN` (`0x101`): the user is not logged in.
    package static let userNotLoggedIn = PKCS11Error(rawValue: 0x101)
    /// `CKR_USER_PIN_NOT_INITIALIZED` (`0x102`): the token's user PIN is not set.
    package static let userPINNotInitialized = PKCS11Error(rawValue: 0x102)
    /// `CKR_USER_TYPE_INVALID` (`0x103`): the user type is not valid.
    package static let userTypeInvalid = PKCS11Error(rawValue: 0x103)
    /// `CKR_BUFFER_TOO_SMALL` (`0x150`): the output buffer is too small.
    package static let bufferTooSmall = PKCS11Error(rawValue: 0x150)
    /// `CKR_CRYPTOKI_NOT_INITIALIZED` (`0x190`): the module is not initialized.
    package static let cryptokiNotInitialized = PKCS11Error(rawValue: 0x190)
    /// `CKR_CRYPTOKI_ALREADY_INITIALIZED` (`0x191`): the module was already initialized.
    package static let cryptokiAlreadyInitialized = PKCS11Error(rawValue: 0x191)
    /// `CKR_FUNCTION_REJECTED` (`0x200`): the token or the user rejected the request.
    package static let functionRejected = PKCS11Error(rawValue: 0x200)

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
    package var name: String {
        if let name = Self.names[rawValue] { return name }
        if rawValue >= 0x8000_0000 { return "CKR_VENDOR_DEFINED+0x" + String(rawValue - 0x8000_0000, radix: 16) }
        return "CK_RV 0x" + String(rawValue, radix: 16)
    }

    /// p11-kit's text for the code, then its name: `The PIN is incorrect (CKR_PIN_INCORRECT)`.
    ///
    /// The corresponding C function is `p11_kit_strerror`.
    package var description: String {
        let text = p11_kit_strerror(CK_RV(rawValue)).map { String(cString: $0) } ?? "Unknown error"
        return "\(text) (\(name))"
    }

    /// Whether the code says the PIN was wrong in a way that spends a try: `CKR_PIN_INCORRECT`, and
    /// `CKR_PIN_LEN_RANGE` (which tokens return for a PIN of a length they never take; as systemd, tokenpin counts
    /// it as a wrong PIN).
    package var isWrongPIN: Bool { self == .pinIncorrect || self == .pinLengthRange }

    /// Whether the code says the token went away or cannot be reached (removed, not present, a device failure).
    package var isTokenGone: Bool {
        self == .deviceRemoved || self == .tokenNotPresent || self == .deviceError || self == .sessionClosed
            || self == .sessionHandleInvalid
    }
}
