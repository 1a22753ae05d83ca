import Testing
import TokenpinAPDU
import TokenpinCore

@testable import TokenpinSimulator

/// The factory profiles: each device's announced bytes, and the behaviours where real cards differ.
@Suite struct ProfileTests {
    static func harness(_ profile: SimulatedProfile) throws -> Harness {
        try Harness(card: SimulatedCard(stateFile: nil, serial: 0x1234_5678, profile: profile))
    }

    /// The historical bytes in the ATR (T0's low nibble counts them; a TCK follows for T=1).
    static func historicalBytes(of atr: [UInt8]) -> [UInt8] {
        var index = 2
        var indicator = atr[1]
        while true {
            let present = Int(indicator >> 4)
            let ta = present & 1
            let tb = (present >> 1) & 1
            let tc = (present >> 2) & 1
            index += ta + tb + tc
            guard present & 8 != 0 else { break }
            indicator = atr[index]
            index += 1
        }
        return Array(atr[index..<(index + Int(atr[1] & 0x0F))])
    }

    @Test("names: every profile by its name, yubikey as an alias of yubikey5, unknown names refused")
    func names() {
        #expect(SimulatedProfile(name: "yubikey") == .yubikey)
        #expect(SimulatedProfile(name: "yubikey5") == .yubikey)
        #expect(SimulatedProfile(name: "nitrokey3") == .nitrokey3)
        #expect(SimulatedProfile(name: "gnuk") == .gnuk)
        #expect(SimulatedProfile(name: "openpgp") == .openpgp)
        #expect(SimulatedProfile(name: "yubikey4") == nil)
        #expect(Set(SimulatedProfile.names) == ["openpgp", "piv-card", "yubikey5", "yubikey", "nitrokey3", "gnuk"])
    }

    @Test("ATRs as the devices send them, with a correct TCK where T=1 needs one")
    func atrs() {
        #expect(
            SimulatedProfile.yubikey.atr == [
                0x3B, 0xFD, 0x13, 0x00, 0x00, 0x81, 0x31, 0xFE, 0x15, 0x80, 0x73, 0xC0,
                0x21, 0xC0, 0x57, 0x59, 0x75, 0x62, 0x69, 0x4B, 0x65, 0x79, 0x40,
            ])
        #expect(
            SimulatedProfile.nitrokey3.atr == [
                0x3B, 0x8C, 0x01, 0x80, 0x5A, 0x4E, 0x69, 0x74, 0x72, 0x6F, 0x6B,
                0x65, 0x79, 0x20, 0x33, 0x7D,
            ])
        #expect(SimulatedProfile.gnuk.atr.suffix(4) == [0x00, 0x90, 0x00, 0xE4])
        for profile in SimulatedProfile.allCases {
            #expect(profile.atr.dropFirst().reduce(0, ^) == 0, "TCK of \(profile)")
        }
        #expect(Array(Self.historicalBytes(of: SimulatedProfile.gnuk.atr)) == OpenPGPTraits.gnuk.historicalBytes)
    }

    @Test("5F52, 7F66, C0 and FA per device", arguments: SimulatedProfile.allCases.filter(\.hasOpenPGP))
    func announcedBytes(profile: SimulatedProfile) throws {
        let harness = try Self.harness(profile)
        let traits = profile.openPGPTraits
        #expect(try harness.getData(0x5F52).data == traits.historicalBytes)
        #expect(try harness.getData(0xC0).data == traits.extendedCapabilities)
        let lengthInformation = try harness.getData(0x7F66)
        let algorithms = try harness.getData(0xFA)
        switch profile {
        case .gnuk:
            #expect(lengthInformation.statusWord == .referencedDataNotFound)
            #expect(algorithms.statusWord == .referencedDataNotFound)
            #expect(HistoricalBytes.lengthCapabilities(traits.historicalBytes)?.extendedLength == false)
        case .nitrokey3:
            #expect(lengthInformation.data == [0x7F, 0x66, 0x08, 0x02, 0x02, 0x1D, 0xB9, 0x02, 0x02, 0x1D, 0xB9])
            #expect(traits.hasKDF)
            #expect(HistoricalBytes.lengthCapabilities(traits.historicalBytes)?.extendedLength == true)
            #expect(HistoricalBytes.lengthCapabilities(traits.historicalBytes)?.commandChaining == false)
        case .yubikey:
            #expect(algorithms.statusWord == .success)
            let entries = try TLV.parseOne(algorithms.data).children()
            #expect(entries.contains { $0.tag == 0xC2 && $0.value == AlgorithmAttributes.cv25519.bytes })
            #expect(entries.contains { $0.tag == 0xC1 && $0.value == [0x01, 0x10, 0x00, 0x00, 0x11, 0x00] })
        default:
            #expect(lengthInformation.data == CardProfile.extendedLengthInformation)
        }
    }

    @Test("factory key attributes: RSA 2048 as shipped on YubiKey 5 and Nitrokey 3, cv25519 on the Gnuk")
    func factoryAttributes() throws {
        #expect(try Self.harness(.yubikey).getData(0xC2).data == [0x01, 0x08, 0x00, 0x00, 0x11, 0x00])
        #expect(try Self.harness(.nitrokey3).getData(0xC2).data == [0x01, 0x08, 0x00, 0x00, 0x20, 0x00])
        #expect(try Self.harness(.gnuk).getData(0xC2).data == AlgorithmAttributes.cv25519.bytes)
        #expect(try Self.harness(.gnuk).getData(0xC1).data == AlgorithmAttributes.ed25519.bytes)
    }

    @Test(
        "a wrong PIN: 63Cx on the reference card and Nitrokey 3, 6982 on YubiKey 5 and Gnuk; counted either way",
        arguments: [
            (SimulatedProfile.openpgp, StatusWord.wrongPIN(retriesLeft: 2)),
            (.nitrokey3, .wrongPIN(retriesLeft: 2)),
            (.yubikey, .securityStatusNotSatisfied), (.gnuk, .securityStatusNotSatisfied),
        ])
    func wrongPIN(profile: SimulatedProfile, expected: StatusWord) throws {
        let harness = try Self.harness(profile)
        #expect(try harness.verify(0x82, "000000") == expected)
        // The status query still tells the tries left.
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord == .wrongPIN(retriesLeft: 2))
    }

    @Test(
        "the verified PIN across a re-SELECT: kept on Gnuk and Nitrokey 3, cleared on YubiKey 5 and the reference",
        arguments: [(SimulatedProfile.openpgp, false), (.yubikey, false), (.nitrokey3, true), (.gnuk, true)])
    func pinStateAcrossSelect(profile: SimulatedProfile, kept: Bool) throws {
        let harness = try Self.harness(profile)
        try requireSuccess(harness.verify(0x82, "123456"))
        try requireSuccess(harness.select())
        let query = try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord
        #expect(query == (kept ? .success : .wrongPIN(retriesLeft: 3)))
        // Selecting the MF always clears it (Gnuk: "clears on 3F00 select").
        try requireSuccess(harness.verify(0x82, "123456"))
        #expect(try harness.send(CardInstruction.select, 0x00, 0x00, [0x3F, 0x00]).statusWord == .success)
        try requireSuccess(harness.select())
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord == .wrongPIN(retriesLeft: 3))
    }

    @Test(
        "AID lengths: Gnuk takes only the 6-byte AID, the others any prefix of 5 or more bytes up to the full AID",
        arguments: SimulatedProfile.allCases.filter(\.hasOpenPGP))
    func aidLengths(profile: SimulatedProfile) throws {
        let harness = try Self.harness(profile)
        let full = harness.card.aid
        let expectedLonger: StatusWord = profile == .gnuk ? .fileNotFound : .success
        #expect(try harness.send(CardInstruction.select, 0x04, 0x00, full).statusWord == expectedLonger)
        #expect(
            try harness.send(CardInstruction.select, 0x04, 0x00, Array(full.prefix(8))).statusWord == expectedLonger)
        #expect(
            try harness.send(CardInstruction.select, 0x04, 0x00, Array(full.prefix(5))).statusWord == expectedLonger)
        #expect(
            try harness.send(CardInstruction.select, 0x04, 0x00, CardProfile.applicationPrefix).statusWord == .success)
    }

    @Test("the connection's length capabilities follow the device")
    func lengthCapabilities() throws {
        #expect(try SimulatedCard(stateFile: nil, profile: .gnuk).lengthCapabilities.extendedLength == false)
        #expect(try SimulatedCard(stateFile: nil, profile: .nitrokey3).lengthCapabilities.maxCommandData == 0x1DB9)
        #expect(try SimulatedCard(stateFile: nil, profile: .yubikey).lengthCapabilities.extendedLength)
    }
}
