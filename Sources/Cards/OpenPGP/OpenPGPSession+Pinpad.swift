package import TokenpinAPDU

/// PW1 and PW3 typed on the reader's keypad (PC/SC part 10 `VERIFY_PIN_DIRECT`, `MODIFY_PIN_DIRECT`).
///
/// The reader sends the command with the PIN as typed: variable length, ASCII, no padding, Lc set by the reader
/// (OpenPGP card 3.4.1, §4.3.1), so a card with the KDF-DO on (which wants the PIN hashed) cannot take it; the caller
/// checks that first. The card's answer goes through the same handling as a typed PIN's (`checkPINAnswer`).
extension OpenPGPSession {
    /// VERIFY of `reference` with the PIN typed on `reader`'s keypad, `minLength` to `maxLength` characters.
    ///
    /// Returns nil when the card accepted the PIN, the reader's refusal (timeout, cancel, wrong length) when the card
    /// saw no PIN. Throws what a typed VERIFY throws (`.wrongPIN`, `.blocked`, ...), `.invalidArgument` when the card
    /// and the keypad share no PIN length.
    package func verify(
        _ reference: PasswordReference, onKeypadOf reader: any PinpadReader, minLength: Int, maxLength: Int
    ) throws(OpenPGPError) -> PinpadRefusal? {
        let header = [Self.interindustryClass, OpenPGPInstruction.verify, 0x00, reference.rawValue]
        return try keypadCommand(reference, header: header, reader: reader, minLength: minLength, maxLength: maxLength)
        {
            (reader, structure) throws(CardTransportError) in try reader.verifyPINDirect(structure)
        }
    }

    /// CHANGE REFERENCE DATA of `reference` with the current PIN, the new one and the new one again typed on
    /// `reader`'s keypad. Returns and throws as `verify(_:onKeypadOf:minLength:maxLength:)`.
    package func changeReferenceData(
        _ reference: PasswordReference, onKeypadOf reader: any PinpadReader, minLength: Int, maxLength: Int
    ) throws(OpenPGPError) -> PinpadRefusal? {
        let header = [Self.interindustryClass, OpenPGPInstruction.changeReferenceData, 0x00, reference.changeReference]
        return try keypadCommand(reference, header: header, reader: reader, minLength: minLength, maxLength: maxLength)
        {
            (reader, structure) throws(CardTransportError) in try reader.modifyPINDirect(structure)
        }
    }

    private func keypadCommand(
        _ reference: PasswordReference, header: [UInt8], reader: any PinpadReader, minLength: Int, maxLength: Int,
        _ send: (any PinpadReader, [UInt8]) throws(CardTransportError) -> PinpadAnswer
    ) throws(OpenPGPError) -> PinpadRefusal? {
        guard let pinpad = reader.pinpad else { throw .invalidArgument("the reader has no PIN pad") }
        let format = PINEntryFormat.openPGP(minLength: minLength, maxLength: min(maxLength, Self.maxPINLength))
        let structure: [UInt8]
        do {
            structure =
                header[1] == OpenPGPInstruction.verify
                ? try PinpadStructure.verify(header: header, format: format, pinpad: pinpad)
                : try PinpadStructure.modify(header: header, format: format, pinpad: pinpad)
        } catch {
            throw .invalidArgument(error.reason)
        }
        trace?("> \(Hex.encode(header, separator: " ")) [on the keypad]")
        let answer: PinpadAnswer
        do {
            answer = try send(reader, structure)
        } catch {
            if case .malformedAnswer(let malformation) = error.kind { throw .malformed(malformation) }
            throw .transport(error)
        }
        let response: ResponseAPDU
        do {
            response = try PinpadRefusal.judge(answer)
        } catch {
            trace?("< \(error) [reader]")
            return error
        }
        trace?("< \(response)")
        guard response.data.isEmpty else {
            throw .malformed(
                APDUError(.trailingBytes, "the card answered a keypad PIN with \(response.data.count) bytes"))
        }
        try checkKeypadAnswer(response.statusWord, answering: header[1], for: reference)
        return nil
    }

    /// The card's answer to the command the reader sent, judged as `sendPIN` judges a typed PIN's: `CardStatus` in
    /// the instruction's context, `69 82` a wrong PIN with the counter read from `C4`.
    private func checkKeypadAnswer(
        _ statusWord: StatusWord, answering instruction: UInt8, for reference: PasswordReference
    )
        throws(OpenPGPError)
    {
        do throws(CardCommandError) {
            let status = try CardStatus(statusWord, answering: instruction, names: transport.names)
            guard status == .success else {
                throw CardCommandError.refused(status, command: transport.names.name(of: instruction))
            }
        } catch .refused(.securityStatusNotSatisfied, _) {
            let left = try passwordStatus().retriesLeft(for: reference)
            throw left == 0 ? .blocked : .wrongPIN(retriesLeft: left)
        } catch {
            throw OpenPGPError(error)
        }
    }
}
