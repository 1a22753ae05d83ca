public import TokenpinAPDU

/// Secure PIN entry on a reader with a keypad (PC/SC v2 part 10) through `SCardControl`.
///
/// Detection asks the reader once per connection, the first time a PIN is needed: `CM_IOCTL_GET_FEATURE_REQUEST`,
/// then `FEATURE_GET_TLV_PROPERTIES` when announced; readers on the quirk list (`PinpadQuirks`) are taken at their
/// keypad's word no more. A reader that refuses the request or answers something malformed has no pinpad: the PIN is
/// typed at the keyboard as on any reader. A PIN command through the keypad waits for the person
/// (`PinpadStructure.timeoutSeconds`) plus the command deadline, and leaves the card to be reset at the end of the
/// transaction whatever it answered, since only the reader knows what it sent.
extension PCSCCardConnection: PinpadReader {
    public var pinpad: Pinpad? {
        if let detected = detectedPinpad { return detected }
        let found = try? detectPinpad()
        detectedPinpad = .some(found ?? nil)
        return found ?? nil
    }

    /// The reader's features and properties; nil when it announces no verify feature or answers the feature request
    /// `SCARD_E_UNSUPPORTED_FEATURE`.
    ///
    /// Throws `PCSCError` or `CardTimeoutError` from the calls, `APDUError` for a malformed answer.
    /// The corresponding C function is `SCardControl`.
    public func detectPinpad() throws -> Pinpad? {
        try checkConnected()
        let card = self.card
        let list: [UInt8]
        do {
            list = try call("SCardControl") {
                try PCSCLibrary.control(
                    card, code: PCSCLibrary.getFeatureRequest, input: [], capacity: PCSCLibrary.maxControlAnswer)
            }
        } catch let error as PCSCError where error == .unexpected {
            return nil  // SCARD_E_UNSUPPORTED_FEATURE: a driver without part 10 (vpcd, most USB tokens)
        }
        return try Self.pinpad(reader: readerName, featureList: list) { code in
            try call("SCardControl") {
                try PCSCLibrary.control(card, code: code, input: [], capacity: PCSCLibrary.maxControlAnswer)
            }
        }
    }

    /// The pinpad a feature list describes, its TLV properties fetched with `properties` when announced.
    static func pinpad(reader: String, featureList: [UInt8], properties: (UInt32) throws -> [UInt8]) throws
        -> Pinpad?
    {
        let features = try PinpadFeatures(parsing: featureList)
        guard features.verifyPINDirect != nil else { return nil }
        let tlv = try features.tlvProperties.map { try PinpadProperties(parsing: properties($0)) }
        return Pinpad(reader: reader, features: features, properties: tlv)
    }

    public func verifyPINDirect(_ structure: [UInt8]) throws -> PinpadAnswer {
        guard let code = pinpad?.canVerify == true ? pinpad?.features.verifyPINDirect : nil else {
            throw PCSCError.unexpected
        }
        return try pinCommand(code, structure)
    }

    public func modifyPINDirect(_ structure: [UInt8]) throws -> PinpadAnswer {
        guard let code = pinpad?.canModify == true ? pinpad?.features.modifyPINDirect : nil else {
            throw PCSCError.unexpected
        }
        return try pinCommand(code, structure)
    }

    /// One PIN command through the keypad: the answer is a response APDU (the reader's `64 0x` or the card's).
    private func pinCommand(_ code: UInt32, _ structure: [UInt8]) throws -> PinpadAnswer {
        try checkConnected()
        let card = self.card
        let wait = Duration.seconds(Int(PinpadStructure.timeoutSeconds)) + timeouts.command
        // Whatever the answer, the card may now hold a verified PIN: the transaction ends with a reset.
        verified.requireReset()
        let answer = try call("SCardControl", timeout: wait) {
            try PCSCLibrary.control(card, code: code, input: structure, capacity: 258)
        }
        return PinpadAnswer(try ResponseAPDU(parsing: answer))
    }
}

/// The pinpad of a reader, asked without a card connection (`tokenpin readers`): a direct connection to the reader,
/// which works with or without a card in it.
public enum PCSCReaderPinpad {
    /// The pinpad of `reader`, nil when it has none; throws `PCSCError`, `CardTimeoutError` or `APDUError`.
    ///
    /// The corresponding C functions are `SCardEstablishContext`, `SCardConnect` (`SCARD_SHARE_DIRECT`),
    /// `SCardControl`, `SCardDisconnect` and `SCardReleaseContext`.
    public static func detect(reader: String, within timeout: Duration) throws -> Pinpad? {
        let watchdog = PCSCWatchdog(reader: reader)
        return try watchdog.run("SCardControl", timeout: timeout) {
            let context = try PCSCLibrary.establishContext()
            defer { PCSCLibrary.releaseContext(context) }
            let card = try PCSCLibrary.connect(
                context, reader: reader, shareMode: PCSCLibrary.shareDirect, protocols: 0
            ).card
            defer { try? PCSCLibrary.disconnect(card, disposition: CardDisposition.leave.rawValue) }
            let list: [UInt8]
            do {
                list = try PCSCLibrary.control(
                    card, code: PCSCLibrary.getFeatureRequest, input: [], capacity: PCSCLibrary.maxControlAnswer)
            } catch let error as PCSCError where error == .unexpected {
                return nil  // SCARD_E_UNSUPPORTED_FEATURE: a driver without part 10 (vpcd, most USB tokens)
            }
            return try PCSCCardConnection.pinpad(reader: reader, featureList: list) { code in
                try PCSCLibrary.control(card, code: code, input: [], capacity: PCSCLibrary.maxControlAnswer)
            }
        }
    }
}
