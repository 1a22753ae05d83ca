/// An error code from PC/SC: the `SCARD_E_`, `SCARD_F_`, `SCARD_P_` and `SCARD_W_` families.
///
/// Like swift-system's `Errno`: a raw code with Swift-named constants. `description` is pcsc-lite's own text
/// (`pcsc_stringify_error`) with the code in hex; `hint` says in plain words what to do about it.
package struct PCSCError: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as pcsc-lite returns it, `0x8010xxxx`.
    package let rawValue: UInt32

    /// Creates an error from its code.
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    // MARK: SCARD_F_ and SCARD_P_: failures inside the resource manager

    /// `SCARD_F_INTERNAL_ERROR` (`0x80100001`): an internal consistency check failed.
    // swift-format-ignore: DontRepeatTypeInStaticProperties
    // The name follows pcsc-lite's SCARD_F_..._ERROR, which the hints and logs quote.
    package static let internalError = PCSCError(rawValue: 0x8010_0001)
    /// `SCARD_F_WAITED_TOO_LONG` (`0x80100007`): an internal consistency timer expired.
    package static let waitedTooLong = PCSCError(rawValue: 0x8010_0007)
    /// `SCARD_F_COMM_ERROR` (`0x80100013`): an internal communications error was detected.
    // swift-format-ignore: DontRepeatTypeInStaticProperties
    // The name follows pcsc-lite's SCARD_F_..._ERROR, which the hints and logs quote.
    package static let communicationError = PCSCError(rawValue: 0x8010_0013)
    /// `SCARD_F_UNKNOWN_ERROR` (`0x80100014`): an internal error of unknown source.
    // swift-format-ignore: DontRepeatTypeInStaticProperties
    // The name follows pcsc-lite's SCARD_F_..._ERROR, which the hints and logs quote.
    package static let unknownError = PCSCError(rawValue: 0x8010_0014)
    /// `SCARD_P_SHUTDOWN` (`0x80100018`): the operation was aborted so that the server can exit.
    package static let shutdown = PCSCError(rawValue: 0x8010_0018)

    // MARK: SCARD_E_: errors

    /// `SCARD_E_CANCELLED` (`0x80100002`): the call was cancelled by `SCardCancel`.
    package static let cancelled = PCSCError(rawValue: 0x8010_0002)
    /// `SCARD_E_INVALID_HANDLE` (`0x80100003`): the context or card handle is not valid (any more).
    package static let invalidHandle = PCSCError(rawValue: 0x8010_0003)
    /// `SCARD_E_INVALID_PARAMETER` (`0x80100004`): a parameter could not be interpreted.
    package static let invalidParameter = PCSCError(rawValue: 0x8010_0004)
    /// `SCARD_E_INVALID_TARGET` (`0x80100005`): registry startup information is missing or invalid.
    package static let invalidTarget = PCSCError(rawValue: 0x8010_0005)
    /// `SCARD_E_NO_MEMORY` (`0x80100006`): not enough memory.
    package static let noMemory = PCSCError(rawValue: 0x8010_0006)
    /// `SCARD_E_INSUFFICIENT_BUFFER` (`0x80100008`): the receive buffer is too small for the answer.
    package static let insufficientBuffer = PCSCError(rawValue: 0x8010_0008)
    /// `SCARD_E_UNKNOWN_READER` (`0x80100009`): no reader of that name.
    package static let unknownReader = PCSCError(rawValue: 0x8010_0009)
    /// `SCARD_E_TIMEOUT` (`0x8010000A`): the caller's timeout expired.
    package static let timeout = PCSCError(rawValue: 0x8010_000A)
    /// `SCARD_E_SHARING_VIOLATION` (`0x8010000B`): another connection holds the card exclusively.
    package static let sharingViolation = PCSCError(rawValue: 0x8010_000B)
    /// `SCARD_E_NO_SMARTCARD` (`0x8010000C`): there is no card in the reader.
    package static let noSmartCard = PCSCError(rawValue: 0x8010_000C)
    /// `SCARD_E_UNKNOWN_CARD` (`0x8010000D`): the card name is not recognized.
    package static let unknownCard = PCSCError(rawValue: 0x8010_000D)
    /// `SCARD_E_CANT_DISPOSE` (`0x8010000E`): the card could not be disposed of as requested.
    package static let cannotDispose = PCSCError(rawValue: 0x8010_000E)
    /// `SCARD_E_PROTO_MISMATCH` (`0x8010000F`): the requested protocols do not match the card's.
    package static let protocolMismatch = PCSCError(rawValue: 0x8010_000F)
    /// `SCARD_E_NOT_READY` (`0x80100010`): the reader or card is not ready for commands.
    package static let notReady = PCSCError(rawValue: 0x8010_0010)
    /// `SCARD_E_INVALID_VALUE` (`0x80100011`): a parameter value could not be interpreted.
    package static let invalidValue = PCSCError(rawValue: 0x8010_0011)
    /// `SCARD_E_SYSTEM_CANCELLED` (`0x80100012`): cancelled by the system (log off, shut down).
    package static let systemCancelled = PCSCError(rawValue: 0x8010_0012)
    /// `SCARD_E_INVALID_ATR` (`0x80100015`): an ATR is not valid.
    package static let invalidATR = PCSCError(rawValue: 0x8010_0015)
    /// `SCARD_E_NOT_TRANSACTED` (`0x80100016`): ending a transaction that does not exist.
    package static let notTransacted = PCSCError(rawValue: 0x8010_0016)
    /// `SCARD_E_READER_UNAVAILABLE` (`0x80100017`): the reader is not available (unplugged).
    package static let readerUnavailable = PCSCError(rawValue: 0x8010_0017)
    /// `SCARD_E_PCI_TOO_SMALL` (`0x80100019`): the PCI receive buffer was too small.
    package static let pciTooSmall = PCSCError(rawValue: 0x8010_0019)
    /// `SCARD_E_READER_UNSUPPORTED` (`0x8010001A`): the reader driver does not meet minimal requirements.
    package static let readerUnsupported = PCSCError(rawValue: 0x8010_001A)
    /// `SCARD_E_DUPLICATE_READER` (`0x8010001B`): the reader driver did not produce a unique name.
    package static let duplicateReader = PCSCError(rawValue: 0x8010_001B)
    /// `SCARD_E_CARD_UNSUPPORTED` (`0x8010001C`): the card does not meet minimal requirements.
    package static let cardUnsupported = PCSCError(rawValue: 0x8010_001C)
    /// `SCARD_E_NO_SERVICE` (`0x8010001D`): the resource manager (pcscd) is not running.
    package static let noService = PCSCError(rawValue: 0x8010_001D)
    /// `SCARD_E_SERVICE_STOPPED` (`0x8010001E`): the resource manager has shut down.
    package static let serviceStopped = PCSCError(rawValue: 0x8010_001E)
    /// `SCARD_E_UNEXPECTED` (`0x8010001F`): an unexpected card error; pcsc-lite also names this code
    /// `SCARD_E_UNSUPPORTED_FEATURE`.
    package static let unexpected = PCSCError(rawValue: 0x8010_001F)
    /// `SCARD_E_ICC_INSTALLATION` (`0x80100020`): no primary provider for the card.
    package static let iccInstallation = PCSCError(rawValue: 0x8010_0020)
    /// `SCARD_E_ICC_CREATEORDER` (`0x80100021`): the requested order of object creation is not supported.
    package static let iccCreateOrder = PCSCError(rawValue: 0x8010_0021)
    /// `SCARD_E_DIR_NOT_FOUND` (`0x80100023`): the directory does not exist on the card.
    package static let directoryNotFound = PCSCError(rawValue: 0x8010_0023)
    /// `SCARD_E_FILE_NOT_FOUND` (`0x80100024`): the file does not exist on the card.
    package static let fileNotFound = PCSCError(rawValue: 0x8010_0024)
    /// `SCARD_E_NO_DIR` (`0x80100025`): the path is not a directory on the card.
    package static let noDirectory = PCSCError(rawValue: 0x8010_0025)
    /// `SCARD_E_NO_FILE` (`0x80100026`): the path is not a file on the card.
    package static let noFile = PCSCError(rawValue: 0x8010_0026)
    /// `SCARD_E_NO_ACCESS` (`0x80100027`): access to the file is denied.
    package static let noAccess = PCSCError(rawValue: 0x8010_0027)
    /// `SCARD_E_WRITE_TOO_MANY` (`0x80100028`): the card does not have enough memory.
    package static let writeTooMany = PCSCError(rawValue: 0x8010_0028)
    /// `SCARD_E_BAD_SEEK` (`0x80100029`): setting the file pointer failed.
    package static let badSeek = PCSCError(rawValue: 0x8010_0029)
    /// `SCARD_E_INVALID_CHV` (`0x8010002A`): the PIN is incorrect.
    package static let invalidCHV = PCSCError(rawValue: 0x8010_002A)
    /// `SCARD_E_UNKNOWN_RES_MNG` (`0x8010002B`): an unrecognized code from a layered component.
    package static let unknownResourceManager = PCSCError(rawValue: 0x8010_002B)
    /// `SCARD_E_NO_SUCH_CERTIFICATE` (`0x8010002C`): the certificate does not exist.
    package static let noSuchCertificate = PCSCError(rawValue: 0x8010_002C)
    /// `SCARD_E_CERTIFICATE_UNAVAILABLE` (`0x8010002D`): the certificate could not be obtained.
    package static let certificateUnavailable = PCSCError(rawValue: 0x8010_002D)
    /// `SCARD_E_NO_READERS_AVAILABLE` (`0x8010002E`): there is no reader.
    package static let noReadersAvailable = PCSCError(rawValue: 0x8010_002E)
    /// `SCARD_E_COMM_DATA_LOST` (`0x8010002F`): a communications error with the card; retry.
    package static let communicationDataLost = PCSCError(rawValue: 0x8010_002F)
    /// `SCARD_E_NO_KEY_CONTAINER` (`0x80100030`): the key container does not exist.
    package static let noKeyContainer = PCSCError(rawValue: 0x8010_0030)
    /// `SCARD_E_SERVER_TOO_BUSY` (`0x80100031`): the resource manager is too busy.
    package static let serverTooBusy = PCSCError(rawValue: 0x8010_0031)

    // MARK: SCARD_W_: warnings

    /// `SCARD_W_UNSUPPORTED_CARD` (`0x80100065`): the reader cannot talk to the card (ATR conflicts).
    package static let unsupportedCard = PCSCError(rawValue: 0x8010_0065)
    /// `SCARD_W_UNRESPONSIVE_CARD` (`0x80100066`): the card does not respond to a reset.
    package static let unresponsiveCard = PCSCError(rawValue: 0x8010_0066)
    /// `SCARD_W_UNPOWERED_CARD` (`0x80100067`): power was removed from the card.
    package static let unpoweredCard = PCSCError(rawValue: 0x8010_0067)
    /// `SCARD_W_RESET_CARD` (`0x80100068`): the card was reset, so any shared state is gone.
    package static let resetCard = PCSCError(rawValue: 0x8010_0068)
    /// `SCARD_W_REMOVED_CARD` (`0x80100069`): the card was removed.
    package static let removedCard = PCSCError(rawValue: 0x8010_0069)
    /// `SCARD_W_SECURITY_VIOLATION` (`0x8010006A`): access denied because of a security violation.
    package static let securityViolation = PCSCError(rawValue: 0x8010_006A)
    /// `SCARD_W_WRONG_CHV` (`0x8010006B`): a wrong PIN was presented.
    package static let wrongCHV = PCSCError(rawValue: 0x8010_006B)
    /// `SCARD_W_CHV_BLOCKED` (`0x8010006C`): the PIN retry counter is at zero.
    package static let chvBlocked = PCSCError(rawValue: 0x8010_006C)
    /// `SCARD_W_EOF` (`0x8010006D`): the end of the card file was reached.
    package static let endOfFile = PCSCError(rawValue: 0x8010_006D)
    /// `SCARD_W_CANCELLED_BY_USER` (`0x8010006E`): the user cancelled a selection dialog.
    package static let cancelledByUser = PCSCError(rawValue: 0x8010_006E)
    /// `SCARD_W_CARD_NOT_AUTHENTICATED` (`0x8010006F`): no PIN was presented.
    package static let cardNotAuthenticated = PCSCError(rawValue: 0x8010_006F)

    // MARK: Describing

    /// pcsc-lite's text for the code, then the code in hex: `Service not available. (0x8010001D)`.
    package var description: String {
        "\(PCSCLibrary.stringify(rawValue)) (0x\(Self.hex8(rawValue)))"
    }

    /// What the error means for the user and what to do, in plain words; nil for codes that only a
    /// programming error produces.
    package var hint: String? {
        switch self {
        case .noService, .serviceStopped, .shutdown:
            return "pcscd, the smart card service, is not running. Start it with "
                + "`sudo systemctl start pcscd.socket` (or run `sudo pcscd`)."
        case .noReadersAvailable:
            return "No smart card reader was found. Plug in the token or reader and try again."
        case .unknownReader, .readerUnavailable:
            return "The reader is gone. Plug it in again, or choose another reader."
        case .noSmartCard:
            return "There is no card in the reader. Insert the card or plug in the token."
        case .removedCard:
            return "The card was removed during the operation. Insert it again and retry."
        case .resetCard:
            return "Another program reset the card during the operation; its state is lost. Retry."
        case .unpoweredCard:
            return "The card lost power during the operation. Insert it again and retry."
        case .sharingViolation:
            return "Another program holds the card exclusively, most likely GnuPG's scdaemon "
                + "(release it with `gpgconf --kill scdaemon`, or add `pcsc-shared` to scdaemon.conf) "
                + "or another tokenpin process. Close it and retry."
        case .timeout:
            return "The card or reader did not answer in time. Retry; if it keeps happening, "
                + "unplug and replug the token."
        case .unresponsiveCard, .notReady, .communicationError, .communicationDataLost, .unsupportedCard:
            return "The card does not respond. Unplug and replug the token or reinsert the card, then retry."
        case .notTransacted:
            return "The card did not complete the command; it may have been removed. Check it and retry."
        case .cancelled, .systemCancelled:
            return "The operation was cancelled."
        case .protocolMismatch, .cardUnsupported:
            return "The card does not speak a protocol this reader offers (T=0 or T=1)."
        case .serverTooBusy:
            return "pcscd is too busy. Retry in a moment."
        default:
            return nil
        }
    }

    /// Whether the card left the reader, lost power or was reset under the connection: the session is
    /// gone and the card must be connected again.
    package var isCardGone: Bool {
        switch self {
        case .removedCard, .noSmartCard, .resetCard, .unpoweredCard, .readerUnavailable, .unknownReader: true
        default: false
        }
    }

    static func hex8(_ value: UInt32) -> String {
        let digits = Array("0123456789ABCDEF")
        return String((0..<8).reversed().map { digits[Int((value >> (UInt32($0) * 4)) & 0xF)] })
    }
}
