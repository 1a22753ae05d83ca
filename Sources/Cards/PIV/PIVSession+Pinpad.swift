package import TokenpinAPDU

/// The PIV PIN (`80`) and PUK (`81`) typed on the reader's keypad (PC/SC part 10 `VERIFY_PIN_DIRECT`,
/// `MODIFY_PIN_DIRECT`): ASCII, 6 to 8 digits, padded with `FF` to 8 bytes in the command the reader completes
/// (SP 800-73-4, part 2, §2.4.3). The card's answer goes through the same handling as a typed PIN's.
extension PIVSession {
    /// VERIFY of the PIN (`puk: false`) with what was typed on `reader`'s keypad.
    ///
    /// Returns nil when the card accepted it, the reader's refusal when the card saw no PIN; throws what a typed
    /// VERIFY throws (`.wrongPIN`, `.blocked`, ...).
    package func verify(onKeypadOf reader: any PinpadReader) throws(PIVError) -> PinpadRefusal? {
        try keypadCommand([0x00, PIVCommand.verify, 0x00, 0x80], reader: reader, modify: false)
    }

    /// CHANGE REFERENCE DATA of the PIN or, with `puk`, the PUK: current, new and new again on the keypad.
    package func changeReferenceData(puk: Bool = false, onKeypadOf reader: any PinpadReader) throws(PIVError)
        -> PinpadRefusal?
    {
        try keypadCommand(
            [0x00, PIVCommand.changeReferenceData, 0x00, puk ? 0x81 : 0x80], reader: reader, modify: true)
    }

    /// RESET RETRY COUNTER (`00 2C 00 80`) with the PUK, the new PIN and the new PIN again typed on `reader`'s
    /// keypad (`MODIFY_PIN_DIRECT`: the PUK in the first 8-byte block, the new PIN in the second, both `FF`-padded;
    /// SP 800-73-4, part 2, §3.2.3). Returns and throws as `verify(onKeypadOf:)`, a wrong PUK as
    /// `.wrongPIN(retriesLeft:)` with the PUK's tries.
    package func unblockPIN(onKeypadOf reader: any PinpadReader) throws(PIVError) -> PinpadRefusal? {
        try keypadCommand([0x00, PIVCommand.resetRetryCounter, 0x00, 0x80], reader: reader, modify: true)
    }

    private func keypadCommand(_ header: [UInt8], reader: any PinpadReader, modify: Bool) throws(PIVError)
        -> PinpadRefusal?
    {
        guard let pinpad = reader.pinpad else { throw .invalidArgument("the reader has no PIN pad") }
        let structure: [UInt8]
        do {
            structure =
                modify
                ? try PinpadStructure.modify(header: header, format: .piv, pinpad: pinpad)
                : try PinpadStructure.verify(header: header, format: .piv, pinpad: pinpad)
        } catch {
            throw .invalidArgument(error.reason)
        }
        trace?("> \(Hex.encode(header, separator: " ")) [on the keypad]")
        let answer: PinpadAnswer
        do {
            answer = modify ? try reader.modifyPINDirect(structure) : try reader.verifyPINDirect(structure)
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
        // Judged as a typed PIN's answer (`sendSensitive`): CardStatus in the instruction's context.
        do throws(CardCommandError) {
            let status = try CardStatus(response.statusWord, answering: header[1], names: transport.names)
            guard status == .success else {
                throw CardCommandError.refused(status, command: transport.names.name(of: header[1]))
            }
        } catch {
            throw PIVError(error)
        }
        return nil
    }
}
