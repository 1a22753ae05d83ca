package import TokenpinAPDU

/// Secure PIN entry on a reader with a keypad (PC/SC v2 part 10) through `SCardControl`.
///
/// Detection asks the reader once per connection, the first time a PIN is needed: `CM_IOCTL_GET_FEATURE_REQUEST`,
/// then `FEATURE_GET_TLV_PROPERTIES` when announced; readers on the quirk list (`PinpadQuirks`) are taken at their
/// keypad's word no more. A reader that refuses the request or answers something malformed has no pinpad: the PIN is
/// typed at the keyboard as on any reader. A PIN command through the keypad waits for the person
/// (`PinpadStructure.timeoutSeconds`) plus the command deadline, and leaves the card to be reset at the end of the
/// transaction whatever it answered, since only the reader knows what it sent.
extension PCSCCardConnection: PinpadReader {
    package var pinpad: Pinpad? {
        if let detected = detectedPinpad { return detected }
        let found = try? detectPinpad()
        detectedPinpad = .some(found ?? nil)
        return found ?? nil
    }

    /// The reader's features and properties; nil when it announces no verify feature, answers the feature request
    /// `SCARD_E_UNSUPPORTED_FEATURE` or answers something malformed.
    ///
    /// Throws the calls' failures. The corresponding C function is `SCardControl`.
    package func detectPinpad() throws(CardTransportError) -> Pinpad? {
        try checkConnected()
        let card = self.card
        let list: [UInt8]
        do {
            list = try call("SCardControl") { () throws(PCSCError) in
                try PCSCLibrary.control(
                    card, code: PCSCLibrary.getFeatureRequest, input: [], capacity: PCSCLibrary.maxControlAnswer)
            }
        } catch  where error.pcscError == .unexpected {
            return nil  // SCARD_E_UNSUPPORTED_FEATURE: a driver without part 10 (vpcd, most USB tokens)
        }
        return try Self.pinpad(reader: readerName, featureList: list) { code throws(CardTransportError) in
            try call("SCardControl") { () throws(PCSCError) in
                try PCSCLibrary.control(card, code: code, input: [], capacity: PCSCLibrary.maxControlAnswer)
            }
        }
    }

    /// The pinpad a feature list describes, its TLV properties fetched with `properties` when announced; nil for a
    /// list or properties that do not parse (a reader that answers something malformed has no pinpad).
    static func pinpad<E: Error>(
        reader: String, featureList: [UInt8], properties: (UInt32) throws(E) -> [UInt8]
    ) throws(E) -> Pinpad? {
        guard let features = try? PinpadFeatures(parsing: featureList), features.verifyPINDirect != nil else {
            return nil
        }
        var tlv: PinpadProperties?
        if let code = features.tlvProperties {
            let answer = try properties(code)
            guard let parsed = try? PinpadProperties(parsing: answer) else { return nil }
            tlv = parsed
        }
        return Pinpad(reader: reader, features: features, properties: tlv)
    }

    package func verifyPINDirect(_ structure: [UInt8]) throws(CardTransportError) -> PinpadAnswer {
        guard let code = pinpad?.canVerify == true ? pinpad?.features.verifyPINDirect : nil else {
            throw CardTransportError(PCSCError.unexpected)
        }
        return try pinCommand(code, structure)
    }

    package func modifyPINDirect(_ structure: [UInt8]) throws(CardTransportError) -> PinpadAnswer {
        guard let code = pinpad?.canModify == true ? pinpad?.features.modifyPINDirect : nil else {
            throw CardTransportError(PCSCError.unexpected)
        }
        return try pinCommand(code, structure)
    }

    /// One PIN command through the keypad: the answer is a response APDU (the reader's `64 0x` or the card's).
    private func pinCommand(_ code: UInt32, _ structure: [UInt8]) throws(CardTransportError) -> PinpadAnswer {
        try checkConnected()
        let card = self.card
        let wait = Duration.seconds(Int(PinpadStructure.timeoutSeconds)) + timeouts.command
        // Whatever the answer, the card may now hold a verified PIN: the transaction ends with a reset.
        verified.requireReset()
        let answer = try call("SCardControl", timeout: wait) { () throws(PCSCError) in
            try PCSCLibrary.control(card, code: code, input: structure, capacity: 258)
        }
        do {
            return PinpadAnswer(try ResponseAPDU(parsing: answer))
        } catch {
            throw CardTransportError(malformed: error)
        }
    }
}

/// The pinpad of a reader, asked without a card connection (`tokenpin readers`): a direct connection to the reader,
/// which works with or without a card in it.
package enum PCSCReaderPinpad {
    /// The pinpad of `reader`, nil when it has none or answers something malformed; throws the calls' failures.
    ///
    /// The corresponding C functions are `SCardEstablishContext`, `SCardConnect` (`SCARD_SHARE_DIRECT`),
    /// `SCardControl`, `SCardDisconnect` and `SCardReleaseContext`.
    package static func detect(reader: String, within timeout: Duration) throws(CardTransportError) -> Pinpad? {
        let watchdog = PCSCWatchdog(reader: reader)
        return try watchdog.run("SCardControl", timeout: timeout) { () throws(PCSCError) -> Pinpad? in
            // A context of the process's pool, back in it when the direct connection was dropped within the deadline.
            var lease = try PCSCContextPool.shared.lease()
            let card: PCSCLibrary.Card
            do throws(PCSCError) {
                card = try lease.firstCall { context throws(PCSCError) in
                    try PCSCLibrary.connect(context, reader: reader, shareMode: PCSCLibrary.shareDirect, protocols: 0)
                        .card
                }
            } catch {
                lease.end(reusable: !watchdog.hasGivenUp, after: error)
                throw error
            }
            defer {
                let dropped = (try? PCSCLibrary.disconnect(card, disposition: CardDisposition.leave.rawValue)) != nil
                lease.end(reusable: dropped && !watchdog.hasGivenUp)
            }
            let list: [UInt8]
            do throws(PCSCError) {
                list = try PCSCLibrary.control(
                    card, code: PCSCLibrary.getFeatureRequest, input: [], capacity: PCSCLibrary.maxControlAnswer)
            } catch {
                guard error == .unexpected else { throw error }
                return nil  // SCARD_E_UNSUPPORTED_FEATURE: a driver without part 10 (vpcd, most USB tokens)
            }
            return try PCSCCardConnection.pinpad(reader: reader, featureList: list) { code throws(PCSCError) in
                try PCSCLibrary.control(card, code: code, input: [], capacity: PCSCLibrary.maxControlAnswer)
            }
        }
    }
}
