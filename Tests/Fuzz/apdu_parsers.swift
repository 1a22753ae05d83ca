// Fuzz target for the APDU layer's parsers (Sources/Cards/APDU): BER-TLV, command and response APDUs, the
// historical bytes, a pinpad reader's feature list and TLV properties. Every byte string is card or host input, so none may trap; whatever parses must encode to
// bytes that parse to the same value.
// Built by Tests/Fuzz/fuzz.sh with `swiftc -sanitize=fuzzer,address`.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAPDUParsers(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let objects = try? TLV.parseAll(bytes) {
        for object in objects {
            precondition((try? TLV.parseOne(object.encoded)) == object, "TLV round trip changed the object")
            _ = try? object.children()
        }
        _ = try? TLV.find(0x86, in: objects)
    }
    if let command = try? CommandAPDU(parsing: bytes) {
        for extended in [false, true] where extended || command.fitsShortForm {
            let again = try? CommandAPDU(parsing: command.encoded(extended: extended))
            precondition(
                again?.data == command.data && again?.le == command.le && again?.ins == command.ins,
                "command APDU round trip changed the command")
        }
    }
    if let response = try? ResponseAPDU(parsing: bytes) {
        precondition(response.encoded == bytes, "response APDU round trip changed the bytes")
    }
    _ = HistoricalBytes.lengthCapabilities(bytes)
    // A reader driver's part 10 answers: no control code of 0 gets through, the keypad's range is consistent, and
    // the structures built for whatever parsed hold exactly the template they announce.
    if let features = try? PinpadFeatures(parsing: bytes) {
        for code in [features.verifyPINDirect, features.modifyPINDirect, features.tlvProperties] {
            precondition(code != 0, "a feature with control code 0 was accepted")
        }
    }
    if let properties = try? PinpadProperties(parsing: bytes) {
        let pinpad = Pinpad(
            reader: "fuzz", features: PinpadFeatures(verifyPINDirect: 1, modifyPINDirect: 2), properties: properties)
        precondition(pinpad.minDigits >= 1 && pinpad.maxDigits <= 64, "the keypad's range left 1-64")
        for format in [PINEntryFormat.piv, .openPGP(minLength: 6, maxLength: 127)] {
            if let structure = try? PinpadStructure.verify(header: [0, 0x20, 0, 0x80], format: format, pinpad: pinpad) {
                let length = Int(structure[15]) | Int(structure[16]) << 8
                precondition(structure.count == 19 + length, "a PIN_VERIFY_STRUCTURE's length disagrees")
                precondition(structure[6] <= structure[5], "the structure's minimum exceeds its maximum")
            }
        }
    }
    if let response = try? ResponseAPDU(parsing: bytes), case .card(let card) = PinpadAnswer(response) {
        precondition(card == response, "a card answer was changed")
    }
    return 0
}
