/// The two status bytes (SW1 SW2) that end every response APDU.
///
/// ISO/IEC 7816-4, §5.1.3. Named constants carry the hex in a comment; call sites never use bare hex.
public struct StatusWord: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// SW1 in the high byte, SW2 in the low byte.
    public var rawValue: UInt16

    /// Creates a status word from its 16-bit value.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Creates a status word from SW1 and SW2.
    public init(sw1: UInt8, sw2: UInt8) { self.rawValue = UInt16(sw1) << 8 | UInt16(sw2) }

    /// The first status byte.
    public var sw1: UInt8 { UInt8(rawValue >> 8) }
    /// The second status byte.
    public var sw2: UInt8 { UInt8(rawValue & 0xFF) }

    /// `90 00`: normal processing.
    public static let success = StatusWord(rawValue: 0x9000)
    /// `62 81`: part of returned data may be corrupted.
    public static let dataMayBeCorrupted = StatusWord(rawValue: 0x6281)
    /// `62 85`: the selected file is in termination state.
    public static let selectedFileTerminated = StatusWord(rawValue: 0x6285)
    /// `64 00`: execution error, memory unchanged.
    public static let executionError = StatusWord(rawValue: 0x6400)
    /// `65 81`: memory failure.
    public static let memoryFailure = StatusWord(rawValue: 0x6581)
    /// `67 00`: wrong length (Lc or Le).
    public static let wrongLength = StatusWord(rawValue: 0x6700)
    /// `68 81`: logical channel not supported.
    public static let logicalChannelNotSupported = StatusWord(rawValue: 0x6881)
    /// `68 82`: secure messaging not supported.
    public static let secureMessagingNotSupported = StatusWord(rawValue: 0x6882)
    /// `68 83`: last command of the chain expected.
    public static let lastCommandOfChainExpected = StatusWord(rawValue: 0x6883)
    /// `68 84`: command chaining not supported.
    public static let commandChainingNotSupported = StatusWord(rawValue: 0x6884)
    /// `69 82`: security status not satisfied (PIN not verified).
    public static let securityStatusNotSatisfied = StatusWord(rawValue: 0x6982)
    /// `69 83`: authentication method blocked (retry counter at zero).
    public static let authenticationMethodBlocked = StatusWord(rawValue: 0x6983)
    /// `69 85`: conditions of use not satisfied.
    public static let conditionsOfUseNotSatisfied = StatusWord(rawValue: 0x6985)
    /// `69 87`: expected secure messaging data objects missing.
    public static let secureMessagingObjectsMissing = StatusWord(rawValue: 0x6987)
    /// `69 88`: secure messaging data objects incorrect.
    public static let secureMessagingObjectsIncorrect = StatusWord(rawValue: 0x6988)
    /// `6A 80`: incorrect parameters in the command data field.
    public static let incorrectData = StatusWord(rawValue: 0x6A80)
    /// `6A 82`: file or application not found.
    public static let fileNotFound = StatusWord(rawValue: 0x6A82)
    /// `6A 86`: incorrect parameters P1-P2.
    public static let incorrectP1P2 = StatusWord(rawValue: 0x6A86)
    /// `6A 88`: referenced data or reference data not found.
    public static let referencedDataNotFound = StatusWord(rawValue: 0x6A88)
    /// `6B 00`: wrong parameters P1-P2.
    public static let wrongP1P2 = StatusWord(rawValue: 0x6B00)
    /// `6D 00`: instruction code not supported or invalid.
    public static let instructionNotSupported = StatusWord(rawValue: 0x6D00)
    /// `6E 00`: class not supported.
    public static let classNotSupported = StatusWord(rawValue: 0x6E00)
    /// `6F 00`: no precise diagnosis.
    public static let noPreciseDiagnosis = StatusWord(rawValue: 0x6F00)

    /// Whether this is `90 00`.
    public var isSuccess: Bool { self == .success }

    /// For `61 xx`: the number of response bytes still available through GET RESPONSE (0 means 256 or more).
    public var bytesRemaining: Int? { sw1 == 0x61 ? Int(sw2) : nil }

    /// For `6C xx`: the exact Le the card wants the command repeated with (0 means 256).
    public var correctLength: Int? { sw1 == 0x6C ? (sw2 == 0 ? 256 : Int(sw2)) : nil }

    /// For `63 Cx`: the retry counter value the card reports (a wrong PIN, or the answer to an empty VERIFY).
    public var retriesLeft: Int? { (sw1 == 0x63 && sw2 & 0xF0 == 0xC0) ? Int(sw2 & 0x0F) : nil }

    /// The instructions that check a PIN: VERIFY `20`, CHANGE REFERENCE DATA `24`, RESET RETRY COUNTER `2C`
    /// (ISO/IEC 7816-4, §11.5.6, §11.5.7, §11.5.10). Only their answers can mean a wrong PIN.
    public static let pinInstructions: Set<UInt8> = [0x20, 0x24, 0x2C]

    /// Whether this is a wrong-PIN status (`63 Cx`) answering `instruction`, which checks no PIN: an answer the
    /// command cannot have, to be treated as a malformed one, never as a PIN outcome.
    public func isMisplacedPINStatus(answering instruction: UInt8) -> Bool {
        retriesLeft != nil && !Self.pinInstructions.contains(instruction)
    }

    /// `63 Cx` with the given number of tries left.
    public static func wrongPIN(retriesLeft: Int) -> StatusWord {
        StatusWord(sw1: 0x63, sw2: 0xC0 | UInt8(clamping: max(0, min(15, retriesLeft))))
    }

    /// `61 xx` announcing the given number of bytes to fetch with GET RESPONSE.
    public static func moreData(_ count: Int) -> StatusWord {
        StatusWord(sw1: 0x61, sw2: count >= 256 ? 0 : UInt8(clamping: count))
    }

    /// The status word as four hex digits, `6982`.
    public var description: String { hex4(rawValue) }

    /// What the status word means, in plain words.
    public var meaning: String {
        if let retries = retriesLeft { return "wrong PIN, \(retries) tries left" }
        if let remaining = bytesRemaining { return "\(remaining == 0 ? 256 : remaining) more bytes available" }
        if let length = correctLength { return "wrong Le, expected \(length)" }
        switch self {
        case .success: return "success"
        case .dataMayBeCorrupted: return "returned data may be corrupted"
        case .selectedFileTerminated: return "application terminated"
        case .executionError: return "execution error"
        case .memoryFailure: return "memory failure"
        case .wrongLength: return "wrong length"
        case .logicalChannelNotSupported: return "logical channel not supported"
        case .secureMessagingNotSupported: return "secure messaging not supported"
        case .lastCommandOfChainExpected: return "last command of the chain expected"
        case .commandChainingNotSupported: return "command chaining not supported"
        case .securityStatusNotSatisfied: return "security status not satisfied"
        case .authenticationMethodBlocked: return "authentication method blocked"
        case .conditionsOfUseNotSatisfied: return "conditions of use not satisfied"
        case .incorrectData: return "incorrect data"
        case .fileNotFound: return "file or application not found"
        case .incorrectP1P2, .wrongP1P2: return "wrong parameters P1-P2"
        case .referencedDataNotFound: return "referenced data not found"
        case .instructionNotSupported: return "instruction not supported"
        case .classNotSupported: return "class not supported"
        default: return "status \(description)"
        }
    }
}

func hex4(_ value: UInt16) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([
        digits[Int(value >> 12) & 0xF], digits[Int(value >> 8) & 0xF],
        digits[Int(value >> 4) & 0xF], digits[Int(value) & 0xF],
    ])
}
