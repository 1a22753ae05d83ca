/// What a reader with a keypad announces it can do (PC/SC v2 part 10, §2.2 and §2.6): the control codes of the
/// features tokenpin uses and the reader's TLV properties.
///
/// Both answers come from the reader driver, which tokenpin does not trust: the parsers take any bytes and either
/// return a consistent value or throw `APDUError`; they never trap and never guess.
public struct PinpadFeatures: Sendable, Equatable {
    /// The feature tags tokenpin reads (part 10, §2.2).
    public enum Tag {
        /// `FEATURE_VERIFY_PIN_DIRECT`: the reader sends a VERIFY with the PIN typed on its keypad.
        public static let verifyPINDirect: UInt8 = 0x06
        /// `FEATURE_MODIFY_PIN_DIRECT`: the same for CHANGE REFERENCE DATA (current and new PIN).
        public static let modifyPINDirect: UInt8 = 0x07
        /// `FEATURE_GET_TLV_PROPERTIES`: the reader's limits as TLVs.
        public static let getTLVProperties: UInt8 = 0x12
    }

    /// The control code of `FEATURE_VERIFY_PIN_DIRECT`, when announced.
    public var verifyPINDirect: UInt32?
    /// The control code of `FEATURE_MODIFY_PIN_DIRECT`, when announced.
    public var modifyPINDirect: UInt32?
    /// The control code of `FEATURE_GET_TLV_PROPERTIES`, when announced.
    public var tlvProperties: UInt32?

    /// Features given by their control codes.
    public init(verifyPINDirect: UInt32? = nil, modifyPINDirect: UInt32? = nil, tlvProperties: UInt32? = nil) {
        self.verifyPINDirect = verifyPINDirect
        self.modifyPINDirect = modifyPINDirect
        self.tlvProperties = tlvProperties
    }

    /// No feature at all: what a reader without a keypad (vpcd, most USB tokens) answers.
    public static let none = PinpadFeatures()

    /// The most bytes a feature list may have: every one of the 256 tags once, 6 bytes each.
    public static let maxListLength = 256 * 6

    /// Parses the answer to `CM_IOCTL_GET_FEATURE_REQUEST`: a sequence of `tag, 04, control code` (the code
    /// big-endian, part 10 §2.2).
    ///
    /// An empty answer is no feature. Refused with `APDUError`: a list longer than `maxListLength`
    /// (`.responseTooLong`), an entry cut short (`.truncated`), a length other than 4 (`.invalidLength`), a tag
    /// given twice (`.invalidTag`: which code would be the reader's?) and a control code of 0 for a feature tokenpin
    /// uses (`.invalidStructure`: pcsc-lite never hands out 0, and sending it would reach another ioctl).
    public init(parsing bytes: [UInt8]) throws(APDUError) {
        guard bytes.count <= Self.maxListLength else {
            throw APDUError(.responseTooLong, "the reader's feature list has \(bytes.count) bytes")
        }
        self.init()
        var seen = Set<UInt8>()
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 2 else {
                throw APDUError(.truncated, "the reader's feature list ends inside an entry at byte \(offset)")
            }
            let tag = bytes[offset]
            let length = Int(bytes[offset + 1])
            guard length == 4 else {
                throw APDUError(.invalidLength, "feature \(hex(tag)) has a \(length)-byte control code, not 4")
            }
            guard bytes.count - offset - 2 >= length else {
                throw APDUError(.truncated, "feature \(hex(tag)) ends after \(bytes.count - offset - 2) bytes")
            }
            guard seen.insert(tag).inserted else {
                throw APDUError(.invalidTag, "the reader announces feature \(hex(tag)) twice")
            }
            let code = bytes[(offset + 2)..<(offset + 6)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            offset += 6
            guard [Tag.verifyPINDirect, Tag.modifyPINDirect, Tag.getTLVProperties].contains(tag) else { continue }
            guard code != 0 else {
                throw APDUError(.invalidStructure, "feature \(hex(tag)) has control code 0")
            }
            switch tag {
            case Tag.verifyPINDirect: verifyPINDirect = code
            case Tag.modifyPINDirect: modifyPINDirect = code
            default: tlvProperties = code
            }
        }
    }
}

/// A reader's TLV properties (part 10, §2.6.14): the ones that shape a PIN entry, and who made the reader.
public struct PinpadProperties: Sendable, Equatable {
    /// `bEntryValidationCondition`: how an entry may end (bit 0 maximum size reached, bit 1 the validation key,
    /// bit 2 a timeout).
    public var entryValidationCondition: UInt8?
    /// `bTimeOut2`: the reader's own timeout after the first key, in seconds.
    public var timeout2: UInt8?
    /// `bMinPINSize`: the fewest digits the keypad takes.
    public var minPINSize: Int?
    /// `bMaxPINSize`: the most digits the keypad takes.
    public var maxPINSize: Int?
    /// `wIdVendor`: the USB vendor ID.
    public var vendorID: UInt16?
    /// `wIdProduct`: the USB product ID.
    public var productID: UInt16?
    /// `sFirmwareID`, as printable ASCII (anything else becomes `?`).
    public var firmwareID: String?
    /// `dwMaxAPDUDataSize`: 0 for short APDUs only.
    public var maxAPDUDataSize: UInt32?

    /// Properties given one by one.
    public init(
        entryValidationCondition: UInt8? = nil, timeout2: UInt8? = nil, minPINSize: Int? = nil,
        maxPINSize: Int? = nil, vendorID: UInt16? = nil, productID: UInt16? = nil, firmwareID: String? = nil,
        maxAPDUDataSize: UInt32? = nil
    ) {
        self.entryValidationCondition = entryValidationCondition
        self.timeout2 = timeout2
        self.minPINSize = minPINSize
        self.maxPINSize = maxPINSize
        self.vendorID = vendorID
        self.productID = productID
        self.firmwareID = firmwareID
        self.maxAPDUDataSize = maxAPDUDataSize
    }

    /// The property tags (part 10, §2.6.14) and the value sizes they must have; others are skipped.
    enum Tag {
        static let entryValidationCondition: UInt8 = 0x02
        static let timeout2: UInt8 = 0x03
        static let minPINSize: UInt8 = 0x06
        static let maxPINSize: UInt8 = 0x07
        static let firmwareID: UInt8 = 0x08
        static let maxAPDUDataSize: UInt8 = 0x0A
        static let vendorID: UInt8 = 0x0B
        static let productID: UInt8 = 0x0C

        /// The value size a known tag must have; nil for the firmware ID (any) and unknown tags.
        static func size(of tag: UInt8) -> Int? {
            switch tag {
            case entryValidationCondition, timeout2, minPINSize, maxPINSize: 1
            case vendorID, productID, 0x01, 0x04, 0x05: 2  // 01 wLcdLayout, 04 wLcdMaxCharacters, 05 wLcdMaxLines
            case maxAPDUDataSize: 4
            default: nil
            }
        }
    }

    /// Parses the answer to `FEATURE_GET_TLV_PROPERTIES`: `tag, length, value` with little-endian integers.
    ///
    /// Refused with `APDUError`: more than 255 bytes (`.responseTooLong`), an entry cut short (`.truncated`), a known
    /// tag with a value of the wrong size (`.invalidLength`), a tag given twice (`.invalidTag`), and a minimum above
    /// the maximum or a maximum of 0 (`.invalidStructure`).
    public init(parsing bytes: [UInt8]) throws(APDUError) {
        guard bytes.count <= 255 else {
            throw APDUError(.responseTooLong, "the reader's TLV properties have \(bytes.count) bytes")
        }
        self.init()
        var seen = Set<UInt8>()
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 2 else {
                throw APDUError(.truncated, "the reader's TLV properties end inside an entry at byte \(offset)")
            }
            let tag = bytes[offset]
            let length = Int(bytes[offset + 1])
            guard bytes.count - offset - 2 >= length else {
                throw APDUError(.truncated, "TLV property \(hex(tag)) ends after \(bytes.count - offset - 2) bytes")
            }
            let value = Array(bytes[(offset + 2)..<(offset + 2 + length)])
            offset += 2 + length
            if let size = Tag.size(of: tag), size != length {
                throw APDUError(.invalidLength, "TLV property \(hex(tag)) has \(length) bytes, not \(size)")
            }
            guard seen.insert(tag).inserted else {
                throw APDUError(.invalidTag, "the reader gives TLV property \(hex(tag)) twice")
            }
            let number = value.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            switch tag {
            case Tag.entryValidationCondition: entryValidationCondition = value[0]
            case Tag.timeout2: timeout2 = value[0]
            case Tag.minPINSize: minPINSize = Int(value[0])
            case Tag.maxPINSize: maxPINSize = Int(value[0])
            case Tag.vendorID: vendorID = UInt16(number)
            case Tag.productID: productID = UInt16(number)
            case Tag.maxAPDUDataSize: maxAPDUDataSize = number
            case Tag.firmwareID:
                firmwareID = String(decoding: value.map { (0x20..<0x7F).contains($0) ? $0 : 0x3F }, as: UTF8.self)
            default: break
            }
        }
        if let maxPINSize, maxPINSize == 0 {
            throw APDUError(.invalidStructure, "the reader's keypad takes PINs of at most 0 digits")
        }
        if let minPINSize, let maxPINSize, minPINSize > maxPINSize {
            throw APDUError(.invalidStructure, "the reader's keypad takes \(minPINSize) to \(maxPINSize) digits")
        }
    }
}

/// Readers known to announce secure PIN entry without having a keypad: their claim is ignored.
///
/// HID OMNIKEY 3x21 and 6121 readers answer `FEATURE_VERIFY_PIN_DIRECT` in their CCID descriptor although they have
/// no keys (OpenSC and pcsc-lite's users hit this; OpenSC ignores the feature on them too).
public enum PinpadQuirks {
    /// One reader model that claims a pinpad it lacks: its USB IDs and the words of its PC/SC name.
    public struct Model: Sendable, Equatable {
        /// The model as messages name it.
        public var name: String
        /// `wIdVendor`.
        public var vendorID: UInt16
        /// `wIdProduct`.
        public var productID: UInt16
        /// What its PC/SC reader name contains (the CCID driver's friendly name).
        public var readerName: String
    }

    /// The models whose pinpad claim is not believed.
    public static let noKeypad: [Model] = [
        Model(name: "HID OMNIKEY 3x21", vendorID: 0x076B, productID: 0x3031, readerName: "OMNIKEY 3x21"),
        Model(name: "HID OMNIKEY 6121", vendorID: 0x076B, productID: 0x6632, readerName: "OMNIKEY 6121"),
    ]

    /// The model `reader` is when it is one of `noKeypad` (by its USB IDs, else by its name), or nil.
    public static func keypadless(reader: String, properties: PinpadProperties?) -> Model? {
        if let vendor = properties?.vendorID, let product = properties?.productID,
            let model = noKeypad.first(where: { $0.vendorID == vendor && $0.productID == product })
        {
            return model
        }
        return noKeypad.first { reader.contains($0.readerName) }
    }
}

/// What tokenpin makes of one reader's secure PIN entry, after the quirk list.
public struct Pinpad: Sendable, Equatable {
    /// The announced features.
    public var features: PinpadFeatures
    /// The TLV properties, when the reader gives them.
    public var properties: PinpadProperties?
    /// Why the features are not used though announced (a reader on the quirk list), or nil.
    public var ignoredBecause: String?

    /// A reader's pinpad as announced, with the quirk list applied.
    public init(reader: String, features: PinpadFeatures, properties: PinpadProperties?) {
        self.features = features
        self.properties = properties
        if features.verifyPINDirect != nil,
            let model = PinpadQuirks.keypadless(reader: reader, properties: properties)
        {
            ignoredBecause = "\(model.name) readers announce a PIN pad they do not have"
        }
    }

    /// Whether PINs can be typed on the reader: it announces `FEATURE_VERIFY_PIN_DIRECT` and is not on the quirk
    /// list.
    public var canVerify: Bool { features.verifyPINDirect != nil && ignoredBecause == nil }
    /// Whether a PIN can also be changed on the keypad (`FEATURE_MODIFY_PIN_DIRECT`).
    public var canModify: Bool { canVerify && features.modifyPINDirect != nil }

    /// The fewest digits the keypad takes (1 when the reader does not say).
    public var minDigits: Int { max(1, properties?.minPINSize ?? 1) }
    /// The most digits the keypad takes: the reader's `bMaxPINSize`, else 16 (what CCID readers take), at most 64.
    public var maxDigits: Int { min(64, properties?.maxPINSize ?? 16) }
}

private func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return digits.count == 1 ? "0" + digits : digits
}
