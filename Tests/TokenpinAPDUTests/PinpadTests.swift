import Testing
import TokenpinAPDU

/// One feature list entry: tag, 04, the control code big-endian.
private func feature(_ tag: UInt8, _ code: UInt32) -> [UInt8] {
    [tag, 4, UInt8(code >> 24), UInt8((code >> 16) & 0xFF), UInt8((code >> 8) & 0xFF), UInt8(code & 0xFF)]
}

/// What the virtual pinpad (Simulator/pinpad) answers: verify, modify, IFD PIN properties, TLV properties.
private let driverList =
    feature(0x06, 0x4233_0001) + feature(0x07, 0x4233_0002) + feature(0x0A, 0x4233_0003) + feature(0x12, 0x4233_0004)
private let driverProperties: [UInt8] = [
    0x01, 2, 0, 0, 0x02, 1, 0x03, 0x06, 1, 4, 0x07, 1, 16, 0x0B, 2, 0x09, 0x12, 0x0C, 2, 0x01, 0x00,
    0x08, 4, 0x54, 0x50, 0x01, 0x31, 0x0A, 4, 0, 0, 0, 0,
]

@Suite("Pinpad features and properties")
struct PinpadParsingTests {
    @Test("a pinpad's feature list gives the three control codes; others are skipped")
    func featureList() throws {
        let features = try PinpadFeatures(parsing: driverList)
        #expect(
            features
                == PinpadFeatures(
                    verifyPINDirect: 0x4233_0001, modifyPINDirect: 0x4233_0002,
                    tlvProperties: 0x4233_0004))
        #expect(try PinpadFeatures(parsing: []) == .none)
        #expect(try PinpadFeatures(parsing: feature(0x13, 0)) == .none, "an unused tag's code is not looked at")
    }

    @Test("malformed feature lists are refused, whichever prefix of a good one they are")
    func malformedFeatureLists() {
        for cut in 1..<driverList.count where cut % 6 != 0 {
            #expect(throws: APDUError.self) { try PinpadFeatures(parsing: Array(driverList.prefix(cut))) }
        }
        let cases: [([UInt8], APDUError.Code)] = [
            ([0x06], .truncated),
            ([0x06, 4, 0x42], .truncated),
            ([0x06, 2, 0x42, 0x33], .invalidLength),
            ([0x06, 5, 0x42, 0x33, 0, 1, 0], .invalidLength),
            (feature(0x06, 1) + feature(0x06, 2), .invalidTag),
            (feature(0x06, 0), .invalidStructure),
            (feature(0x12, 0), .invalidStructure),
            ([UInt8](repeating: 0x13, count: PinpadFeatures.maxListLength + 1), .responseTooLong),
        ]
        for (bytes, code) in cases {
            #expect(throws: APDUError.self) { try PinpadFeatures(parsing: bytes) }
            #expect((try? PinpadFeatures(parsing: bytes)) == nil)
            do {
                _ = try PinpadFeatures(parsing: bytes)
            } catch {
                #expect(error.code == code, "\(bytes)")
            }
        }
    }

    @Test("TLV properties: sizes, IDs and the firmware, little-endian")
    func properties() throws {
        let properties = try PinpadProperties(parsing: driverProperties)
        #expect(properties.entryValidationCondition == 0x03)
        #expect(properties.minPINSize == 4)
        #expect(properties.maxPINSize == 16)
        #expect(properties.vendorID == 0x1209)
        #expect(properties.productID == 0x0001)
        #expect(properties.firmwareID == "TP?1")
        #expect(properties.maxAPDUDataSize == 0)
        #expect(try PinpadProperties(parsing: [0x7F, 3, 1, 2, 3]) == PinpadProperties(), "unknown tags are skipped")
    }

    @Test("malformed TLV properties are refused with the right code")
    func malformedProperties() {
        for cut in 1..<driverProperties.count {
            _ = try? PinpadProperties(parsing: Array(driverProperties.prefix(cut)))  // never traps
        }
        let cases: [([UInt8], APDUError.Code)] = [
            ([0x06], .truncated),
            ([0x0B, 2, 0x09], .truncated),
            ([0x06, 2, 4, 0], .invalidLength),
            ([0x0B, 1, 0x09], .invalidLength),
            ([0x0A, 2, 0, 0], .invalidLength),
            ([0x06, 1, 4, 0x06, 1, 6], .invalidTag),
            ([0x06, 1, 9, 0x07, 1, 8], .invalidStructure),
            ([0x07, 1, 0], .invalidStructure),
            ([0x08, 0xFF] + [UInt8](repeating: 0x41, count: 255), .responseTooLong),
        ]
        for (bytes, code) in cases {
            do {
                _ = try PinpadProperties(parsing: bytes)
                Issue.record("accepted \(bytes)")
            } catch {
                #expect(error.code == code, "\(bytes)")
            }
        }
    }

    @Test("random bytes never trap either parser")
    func randomBytes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...40, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if Bool.random(using: &generator), !bytes.isEmpty { bytes[0] = [0x06, 0x07, 0x12].randomElement()! }
            _ = try? PinpadFeatures(parsing: bytes)
            _ = try? PinpadProperties(parsing: bytes)
        }
    }

    @Test("OMNIKEY 3x21 and 6121 readers' pinpad claims are ignored, by USB IDs or by name")
    func quirks() throws {
        let features = try PinpadFeatures(parsing: driverList)
        let plain = Pinpad(reader: "Cherry SmartTerminal ST-2xxx", features: features, properties: nil)
        #expect(plain.canVerify && plain.canModify && plain.ignoredBecause == nil)
        let byID = Pinpad(
            reader: "tokenpin pinpad 0 00 00", features: features,
            properties: PinpadProperties(vendorID: 0x076B, productID: 0x3031))
        #expect(!byID.canVerify && !byID.canModify)
        #expect(byID.ignoredBecause?.contains("OMNIKEY 3x21") == true)
        let byName = Pinpad(
            reader: "HID Global OMNIKEY 6121 Smart Card Reader [OMNIKEY 6121 Smart Card Reader] 00 00",
            features: features, properties: nil)
        #expect(!byName.canVerify)
        let otherOmnikey = Pinpad(
            reader: "HID OMNIKEY 3921", features: features,
            properties: PinpadProperties(vendorID: 0x076B, productID: 0x3921))
        #expect(otherOmnikey.canVerify)
    }
}

@Suite("Pinpad structures and answers")
struct PinpadStructureTests {
    let pinpad = Pinpad(
        reader: "r", features: PinpadFeatures(verifyPINDirect: 1, modifyPINDirect: 2),
        properties: PinpadProperties(entryValidationCondition: 0x03, minPINSize: 4, maxPINSize: 16))

    @Test("PIV VERIFY: FF-padded 8-byte ASCII block, 6 to 8 digits, 30 s")
    func pivVerify() throws {
        let structure = try PinpadStructure.verify(header: [0x00, 0x20, 0x00, 0x80], format: .piv, pinpad: pinpad)
        #expect(
            structure
                == [30, 30, 0x82, 0x08, 0x00, 8, 6, 0x02, 0x01, 0x09, 0x04, 0, 0, 0, 0, 13, 0, 0, 0]
                + [0x00, 0x20, 0x00, 0x80, 0x08] + [UInt8](repeating: 0xFF, count: 8))
        #expect(structure.count == 19 + 13)
    }

    @Test("OpenPGP VERIFY: variable length, Lc 00 for the reader to set, the keypad's maximum")
    func openPGPVerify() throws {
        let structure = try PinpadStructure.verify(
            header: [0x00, 0x20, 0x00, 0x82], format: .openPGP(minLength: 6, maxLength: 127), pinpad: pinpad)
        #expect(
            structure == [30, 30, 0x82, 0x00, 0x00, 16, 6, 0x02, 0x01, 0x09, 0x04, 0, 0, 0, 0, 5, 0, 0, 0]
                + [0x00, 0x20, 0x00, 0x82, 0x00])
    }

    @Test("MODIFY: current, new and again; PIV's two blocks at 0 and 8, OpenPGP's concatenated")
    func modify() throws {
        let piv = try PinpadStructure.modify(header: [0x00, 0x24, 0x00, 0x80], format: .piv, pinpad: pinpad)
        #expect(
            Array(piv.prefix(24)) == [
                30, 30, 0x82, 0x08, 0, 0, 8, 8, 6, 0x03, 0x02, 0x03, 0x09, 0x04, 0, 1, 2, 0, 0, 0, 21, 0, 0, 0,
            ])
        #expect(Array(piv.suffix(21)) == [0x00, 0x24, 0x00, 0x80, 0x10] + [UInt8](repeating: 0xFF, count: 16))
        let openPGP = try PinpadStructure.modify(
            header: [0x00, 0x24, 0x00, 0x81], format: .openPGP(minLength: 6, maxLength: 127), pinpad: pinpad)
        #expect(openPGP.count == 24 + 5)
        #expect(openPGP[5] == 0 && openPGP[6] == 0)
    }

    @Test("OpenPGP admin PIN (VERIFY PW3, 83): variable length, at least 8 digits, up to the keypad's maximum")
    func adminPINVerify() throws {
        let structure = try PinpadStructure.verify(
            header: [0x00, 0x20, 0x00, 0x83], format: .openPGP(minLength: 8, maxLength: 127), pinpad: pinpad)
        #expect(
            structure == [30, 30, 0x82, 0x00, 0x00, 16, 8, 0x02, 0x01, 0x09, 0x04, 0, 0, 0, 0, 5, 0, 0, 0]
                + [0x00, 0x20, 0x00, 0x83, 0x00])
        // A card that allows at most 12 admin PIN characters caps the keypad's 16.
        let capped = try PinpadStructure.verify(
            header: [0x00, 0x20, 0x00, 0x83], format: .openPGP(minLength: 8, maxLength: 12), pinpad: pinpad)
        #expect(capped[5] == 12 && capped[6] == 8)
    }

    @Test("PIV PUK (RESET RETRY COUNTER 2C, P2 80): the PUK's block at 0, the new PIN's at 8, new PIN confirmed")
    func pukUnblock() throws {
        let structure = try PinpadStructure.modify(header: [0x00, 0x2C, 0x00, 0x80], format: .piv, pinpad: pinpad)
        #expect(
            structure
                == [
                    30, 30, 0x82, 0x08, 0x00,  // timeouts, ASCII in bytes, 8-byte blocks, no length field
                    0, 8,  // bInsertionOffsetOld (the PUK), bInsertionOffsetNew (the new PIN)
                    8, 6, 0x03, 0x02, 0x03,  // 6 to 8 digits, PUK + new + confirmation, validation key, 3 messages
                    0x09, 0x04, 0, 1, 2, 0, 0, 0, 21, 0, 0, 0,
                ] + [0x00, 0x2C, 0x00, 0x80, 0x10] + [UInt8](repeating: 0xFF, count: 16))
    }

    @Test("check: an admin PIN of 8 or more does not fit a keypad of at most 6 digits; a PIV PUK does")
    func checkFormats() throws {
        let six = Pinpad(
            reader: "r", features: PinpadFeatures(verifyPINDirect: 1, modifyPINDirect: 2),
            properties: PinpadProperties(minPINSize: 4, maxPINSize: 6))
        #expect(throws: PinpadUnsuitable.self) {
            try PinpadStructure.check(.openPGP(minLength: 8, maxLength: 127), on: six)
        }
        try PinpadStructure.check(.piv, on: six)
        try PinpadStructure.check(.openPGP(minLength: 8, maxLength: 127), on: pinpad)
        // What check refuses, verify refuses with the same words.
        var checked: PinpadUnsuitable?
        do { try PinpadStructure.check(.openPGP(minLength: 8, maxLength: 127), on: six) } catch { checked = error }
        let reason = try #require(checked)
        #expect(throws: reason) {
            try PinpadStructure.verify(
                header: [0x00, 0x20, 0x00, 0x83], format: .openPGP(minLength: 8, maxLength: 127), pinpad: six)
        }
    }

    @Test("a keypad and a card that share no length, or a reader without the validation key")
    func limits() throws {
        let short = Pinpad(
            reader: "r", features: PinpadFeatures(verifyPINDirect: 1),
            properties: PinpadProperties(minPINSize: 1, maxPINSize: 4))
        #expect(throws: PinpadUnsuitable.self) {
            try PinpadStructure.verify(header: [0, 0x20, 0, 0x80], format: .piv, pinpad: short)
        }
        let maxOnly = Pinpad(
            reader: "r", features: PinpadFeatures(verifyPINDirect: 1),
            properties: PinpadProperties(entryValidationCondition: 0x01))
        #expect(try PinpadStructure.verify(header: [0, 0x20, 0, 0x80], format: .piv, pinpad: maxOnly)[7] == 0x01)
        #expect(throws: PinpadUnsuitable.self) {
            try PinpadStructure.verify(header: [0, 0x20, 0], format: .piv, pinpad: maxOnly)
        }
    }

    @Test("the reader's 64 0x answers are its own; everything else is the card's")
    func answers() {
        #expect(PinpadAnswer(ResponseAPDU(statusWord: StatusWord(rawValue: 0x6400))) == .timedOut)
        #expect(PinpadAnswer(ResponseAPDU(statusWord: StatusWord(rawValue: 0x6401))) == .cancelled)
        #expect(PinpadAnswer(ResponseAPDU(statusWord: StatusWord(rawValue: 0x6402))) == .entriesDiffer)
        #expect(PinpadAnswer(ResponseAPDU(statusWord: StatusWord(rawValue: 0x6403))) == .wrongLength)
        for raw: UInt16 in [0x9000, 0x63C2, 0x6983, 0x6404, 0x6982] {
            let response = ResponseAPDU(statusWord: StatusWord(rawValue: raw))
            #expect(PinpadAnswer(response) == .card(response))
        }
        let withData = ResponseAPDU(data: [1], statusWord: StatusWord(rawValue: 0x6401))
        #expect(PinpadAnswer(withData) == .card(withData))
    }
}
