/// How a card application wants its PIN in the command's data field, which is what a pinpad has to produce.
public struct PINEntryFormat: Sendable, Equatable {
    /// The PIN block: a fixed number of bytes padded with a filler byte, or exactly as long as the PIN.
    public enum Block: Sendable, Equatable {
        /// ASCII digits, left-justified, padded with `filler` to `size` bytes (PIV: `FF` to 8).
        case padded(size: Int, filler: UInt8)
        /// ASCII digits and nothing else; the reader sets Lc (OpenPGP).
        case variable
    }

    /// The block.
    public var block: Block
    /// The fewest characters the card takes.
    public var minLength: Int
    /// The most characters the card takes.
    public var maxLength: Int

    /// A format.
    public init(block: Block, minLength: Int, maxLength: Int) {
        self.block = block
        self.minLength = minLength
        self.maxLength = maxLength
    }

    /// A PIV PIN or PUK (SP 800-73-4, part 2, §2.4.3): 6 to 8 ASCII digits padded with `FF` to 8 bytes.
    public static let piv = PINEntryFormat(block: .padded(size: 8, filler: 0xFF), minLength: 6, maxLength: 8)

    /// An OpenPGP password (OpenPGP card 3.4.1, §4.3.1): UTF-8 (digits on a keypad) of `minLength` to `maxLength`
    /// bytes as they are, no padding.
    public static func openPGP(minLength: Int, maxLength: Int) -> PINEntryFormat {
        PINEntryFormat(block: .variable, minLength: minLength, maxLength: maxLength)
    }
}

/// Why no structure could be built for a pinpad: the card's format and the reader's keypad do not meet.
public struct PinpadUnsuitable: Error, Sendable, Equatable, CustomStringConvertible {
    /// What does not fit, for people.
    public var reason: String
    /// An error naming `reason`.
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// `PIN_VERIFY_STRUCTURE` and `PIN_MODIFY_STRUCTURE` (PC/SC v2 part 10, §2.5.2 and §2.5.3; pcsc-lite's reader.h):
/// byte-packed, multi-byte fields little-endian, the command template at the end.
public enum PinpadStructure {
    /// Seconds the person has to type the PIN (`bTimerOut` and `bTimerOut2`).
    public static let timeoutSeconds: UInt8 = 30

    /// `bmFormatString`: byte units, PIN at position 0, left-justified, ASCII.
    static let asciiLeftInBytes: UInt8 = 0x82
    /// `wLangId`: English (US), what readers without a display ignore.
    static let language: [UInt8] = [0x09, 0x04]

    /// The digits both the card and the keypad take, or why there are none.
    static func digits(_ format: PINEntryFormat, on pinpad: Pinpad) throws(PinpadUnsuitable) -> ClosedRange<Int> {
        let low = max(format.minLength, pinpad.minDigits, 1)
        var high = min(format.maxLength, pinpad.maxDigits, 255)
        if case .padded(let size, _) = format.block { high = min(high, size) }
        guard low <= high else {
            throw PinpadUnsuitable(
                "the card takes PINs of \(format.minLength) to \(format.maxLength) characters and the keypad "
                    + "\(pinpad.minDigits) to \(pinpad.maxDigits) digits")
        }
        return low...high
    }

    /// Checks that the card's `format` and `pinpad`'s keypad share a PIN length, before anything is asked: throws
    /// what `verify` and `modify` would (an OpenPGP admin PIN takes at least 8 digits, which a keypad of at most 6
    /// cannot give).
    public static func check(_ format: PINEntryFormat, on pinpad: Pinpad) throws(PinpadUnsuitable) {
        _ = try digits(format, on: pinpad)
    }

    /// `bEntryValidationCondition`: the validation key where the reader has it (or does not say), else what it has.
    static func validation(on pinpad: Pinpad) -> UInt8 {
        guard let announced = pinpad.properties?.entryValidationCondition, announced & 0x02 == 0 else { return 0x02 }
        return announced & 0x01 != 0 ? 0x01 : 0x02
    }

    /// The command template: `CLA INS P1 P2` and the data field the reader fills (padding, or nothing: Lc 00).
    static func template(header: [UInt8], format: PINEntryFormat, blocks: Int) -> [UInt8] {
        switch format.block {
        case .padded(let size, let filler):
            return header + [UInt8(size * blocks)] + [UInt8](repeating: filler, count: size * blocks)
        case .variable:
            return header + [0x00]
        }
    }

    /// `bmPINBlockString`: no PIN length field; the block size in bytes (0: variable).
    static func blockString(_ format: PINEntryFormat) -> UInt8 {
        if case .padded(let size, _) = format.block { return UInt8(size & 0x0F) }
        return 0x00
    }

    /// A `PIN_VERIFY_STRUCTURE` for VERIFY (`header`: `CLA 20 P1 P2`) in `format` on `pinpad`.
    public static func verify(header: [UInt8], format: PINEntryFormat, pinpad: Pinpad) throws(PinpadUnsuitable)
        -> [UInt8]
    {
        guard header.count == 4 else { throw PinpadUnsuitable("a command header has 4 bytes") }
        let range = try digits(format, on: pinpad)
        let apdu = template(header: header, format: format, blocks: 1)
        var structure: [UInt8] = [
            timeoutSeconds, timeoutSeconds, asciiLeftInBytes, blockString(format), 0x00,
            UInt8(range.upperBound), UInt8(range.lowerBound), validation(on: pinpad), 0x01,
        ]
        structure += language + [0x00, 0x00, 0x00, 0x00]  // bMsgIndex, bTeoPrologue
        structure += littleEndian32(apdu.count) + apdu
        return structure
    }

    /// A `PIN_MODIFY_STRUCTURE` for CHANGE REFERENCE DATA (`header`: `CLA 24 P1 P2`) in `format` on `pinpad`: the
    /// current PIN, the new one and the new one again (`bConfirmPIN` 03), the current PIN's block first.
    ///
    /// RESET RETRY COUNTER with the unblocking code and the new PIN in one command (`CLA 2C 00 P2`, PIV's PUK) is the
    /// same structure: the PUK takes the current PIN's place (offset 0), the new PIN the second block, as OpenSC's
    /// pcsc reader sends an unblock. Only a padded format can place the second PIN; a variable one cannot (where
    /// would the reader put it?), so an OpenPGP Reset Code is typed at the keyboard.
    public static func modify(header: [UInt8], format: PINEntryFormat, pinpad: Pinpad) throws(PinpadUnsuitable)
        -> [UInt8]
    {
        guard header.count == 4 else { throw PinpadUnsuitable("a command header has 4 bytes") }
        let range = try digits(format, on: pinpad)
        let apdu = template(header: header, format: format, blocks: 2)
        let newOffset: UInt8 = if case .padded(let size, _) = format.block { UInt8(size) } else { 0 }
        var structure: [UInt8] = [
            timeoutSeconds, timeoutSeconds, asciiLeftInBytes, blockString(format), 0x00, 0x00, newOffset,
            UInt8(range.upperBound), UInt8(range.lowerBound), 0x03, validation(on: pinpad), 0x03,
        ]
        structure += language + [0x00, 0x01, 0x02, 0x00, 0x00, 0x00]  // bMsgIndex1-3, bTeoPrologue
        structure += littleEndian32(apdu.count) + apdu
        return structure
    }

    private static func littleEndian32(_ value: Int) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8((value >> 24) & 0xFF)]
    }
}

/// What came back from a PIN typed on a keypad: the reader's own answer (part 10, §2.5.2), or the card's.
public enum PinpadAnswer: Sendable, Equatable {
    /// `64 00`: nobody typed in time. The card saw nothing.
    case timedOut
    /// `64 01`: the person pressed Cancel. The card saw nothing.
    case cancelled
    /// `64 02`: the new PIN and its confirmation differ. The card saw nothing.
    case entriesDiffer
    /// `64 03`: the PIN typed was too short or too long for the structure. The card saw nothing.
    case wrongLength
    /// The card's answer to the command the reader sent: status handling as for a typed PIN.
    case card(ResponseAPDU)

    /// The reader's answers are `64 00` to `64 03` with no data; anything else is the card's.
    ///
    /// A card could answer `64 00` (execution error) itself: taken as a timeout, it opens nothing and the card's
    /// own counter stays what the card says it is.
    public init(_ response: ResponseAPDU) {
        guard response.data.isEmpty else {
            self = .card(response)
            return
        }
        switch response.statusWord.rawValue {
        case 0x6400: self = .timedOut
        case 0x6401: self = .cancelled
        case 0x6402: self = .entriesDiffer
        case 0x6403: self = .wrongLength
        default: self = .card(response)
        }
    }
}

/// A card connection whose reader has a keypad: PIN commands the reader completes with what was typed on it.
///
/// The connection treats the answer as it treats a typed VERIFY's (a PIN left verified on the card is dropped when the
/// transaction ends); the application's session reads the status word.
public protocol PinpadReader: AnyObject {
    /// The reader's secure PIN entry, detected once per connection; nil when the reader has none or does not answer
    /// the feature request.
    var pinpad: Pinpad? { get }
    /// The reader's name, for "Enter the card PIN on the keypad of ‹reader›".
    var readerName: String { get }
    /// `FEATURE_VERIFY_PIN_DIRECT` with `structure` (`PinpadStructure.verify`); waits for the keypad.
    /// - Throws: the transport's failure; `.malformedAnswer` for a reader's answer without a status word.
    func verifyPINDirect(_ structure: [UInt8]) throws(CardTransportError) -> PinpadAnswer
    /// `FEATURE_MODIFY_PIN_DIRECT` with `structure` (`PinpadStructure.modify`); waits for the keypad.
    /// - Throws: the transport's failure; `.malformedAnswer` for a reader's answer without a status word.
    func modifyPINDirect(_ structure: [UInt8]) throws(CardTransportError) -> PinpadAnswer
}

/// A PIN entry on the keypad that ended without the card judging a PIN: nothing was counted.
public enum PinpadRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nobody typed in time (`64 00`).
    case timedOut
    /// The person pressed Cancel (`64 01`).
    case cancelled
    /// The new PIN and its confirmation differ (`64 02`).
    case entriesDiffer
    /// The PIN typed was too short or too long (`64 03`).
    case wrongLength

    /// The reader's answer as a refusal, or the card's response to judge.
    public static func judge(_ answer: PinpadAnswer) throws(PinpadRefusal) -> ResponseAPDU {
        switch answer {
        case .timedOut: throw .timedOut
        case .cancelled: throw .cancelled
        case .entriesDiffer: throw .entriesDiffer
        case .wrongLength: throw .wrongLength
        case .card(let response): return response
        }
    }

    public var description: String {
        switch self {
        case .timedOut: "nothing was typed on the keypad within \(PinpadStructure.timeoutSeconds) s"
        case .cancelled: "the PIN entry was cancelled on the keypad"
        case .entriesDiffer: "the new PIN and its confirmation typed on the keypad differ"
        case .wrongLength: "the PIN typed on the keypad was too short or too long"
        }
    }
}
