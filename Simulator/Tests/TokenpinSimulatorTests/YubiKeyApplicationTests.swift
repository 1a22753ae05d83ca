import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore

@testable import TokenpinSimulator

/// SELECT as cards have it, and the YubiKey's management and OTP applications.
@Suite("SELECT semantics and the YubiKey applications")
struct YubiKeyApplicationTests {
    static let managementAID: [UInt8] = [0xA0, 0x00, 0x00, 0x05, 0x27, 0x47, 0x11, 0x17]
    static let otpAID: [UInt8] = [0xA0, 0x00, 0x00, 0x05, 0x27, 0x20, 0x01, 0x01]
    /// OATH: an application no profile carries.
    static let oathAID: [UInt8] = [0xA0, 0x00, 0x00, 0x05, 0x27, 0x21, 0x01]

    static func card(_ profile: SimulatedProfile, serial: UInt32? = 23_456_789) throws -> Harness {
        try Harness(card: SimulatedCard(stateFile: nil, serial: serial, profile: profile), select: false)
    }

    static func select(_ harness: Harness, _ aid: [UInt8]) throws -> ResponseAPDU {
        try harness.send(CardInstruction.select, 0x04, 0x00, aid, le: 256)
    }

    // MARK: SELECT

    @Test(
        "an AID naming no application answers 6A82 and keeps the OpenPGP application, its PINs and its state",
        arguments: SimulatedProfile.allCases.filter(\.hasOpenPGP))
    func failedSelectKeepsOpenPGP(profile: SimulatedProfile) throws {
        let harness = try Self.card(profile)
        try requireSuccess(harness.select())
        try requireSuccess(harness.verify(0x82, "123456"))
        try requireSuccess(harness.verify(0x83, "12345678"))
        var absent = [Self.oathAID, [0xD2, 0x76, 0x00, 0x01, 0x24, 0x02]]
        if !profile.hasPIV { absent.append(Array(PIVProfile.aid.prefix(5))) }
        if !profile.hasYubiKeyExtensions { absent += [Self.managementAID, Self.otpAID] }
        for aid in absent {
            #expect(try Self.select(harness, aid).statusWord == .fileNotFound, "\(Hex.encode(aid))")
        }
        // Other P1 values and a file that is not there change nothing either.
        #expect(try harness.send(CardInstruction.select, 0x02, 0x00, [0x2F, 0x02]).statusWord == .incorrectP1P2)
        #expect(try harness.send(CardInstruction.select, 0x00, 0x0C, [0x2F, 0x02]).statusWord == .fileNotFound)
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x82).statusWord == .success)
        #expect(try harness.send(CardInstruction.verify, 0x00, 0x83).statusWord == .success)
        #expect(try harness.getData(0x4F).data == harness.card.aid)
    }

    @Test("on a PIV card a SELECT of an absent application (YubiKey management, OpenPGP, the MF) keeps PIV verified")
    func failedSelectKeepsPIV() throws {
        let harness = try PIVHarness(profile: .pivCard, select: false)
        try requireSuccess(harness.verify("123456"))
        for aid in [Self.managementAID, Self.otpAID, CardProfile.applicationPrefix] {
            #expect(try harness.select(aid).statusWord == .fileNotFound)
        }
        #expect(
            try harness.send(CardInstruction.select, 0x00, 0x00, [0x3F, 0x00], le: nil).statusWord == .fileNotFound)
        #expect(try harness.verify(nil) == .success)
        #expect(try harness.getData([0x7E]).statusWord == .success)
    }

    @Test("on a YubiKey a failed SELECT keeps PIV with its PIN; selecting another application deselects it")
    func yubiKeySelect() throws {
        let harness = try PIVHarness(profile: .yubikey)
        try requireSuccess(harness.verify("123456"))
        #expect(try harness.select(Self.oathAID).statusWord == .fileNotFound)
        #expect(try harness.verify(nil) == .success)
        try requireSuccess(harness.select(Self.managementAID).statusWord)
        try requireSuccess(harness.select().statusWord)
        #expect(try harness.verify(nil) == .wrongPIN(retriesLeft: 3))
    }

    // MARK: Management

    @Test("management: SELECT answers the version string, READ CONFIG the device information")
    func management() throws {
        let harness = try Self.card(.yubikey)
        let selected = try Self.select(harness, Self.managementAID)
        try requireSuccess(selected.statusWord)
        #expect(String(decoding: selected.data, as: UTF8.self) == "Virtual mgr - FW version 5.4.3")
        let config = try harness.send(YubiKeyApplications.readConfig, 0x00, 0x00, le: 256)
        try requireSuccess(config.statusWord)
        let information = try #require(config.data.first.map { Int($0) })
        #expect(information == config.data.count - 1)
        let tlvs = try TLV.parseAll(Array(config.data.dropFirst()))
        func value(_ tag: UInt32) -> [UInt8]? { tlvs.first { $0.tag == tag }?.value }
        #expect(value(0x02) == [0x01, 0x65, 0xEC, 0x15])  // 23456789
        #expect(value(0x05) == [0x05, 0x04, 0x03])
        #expect(value(0x04) == [0x01])
        #expect(value(0x01) == [0x02, 0x3F])
        #expect(value(0x03) == [0x00, 0x1D])
        #expect(value(0x0D) == [0x02, 0x3F])
        #expect(value(0x0E) == [0x00, 0x1D])
        #expect(value(0x08) == [0x00])
        #expect(value(0x0A) == [0x00])
        // Every enabled application is one SELECT finds.
        #expect(YubiKeyDevice.enabledCapabilities & ~YubiKeyDevice.supportedCapabilities == 0)
        #expect(try harness.send(YubiKeyApplications.readConfig, 0x01, 0x00, le: 256).statusWord == .incorrectP1P2)
        #expect(try harness.send(0x1C, 0x00, 0x00, [0x00]).statusWord == .instructionNotSupported)
        // Management selected: OpenPGP commands do not reach OpenPGP.
        #expect(try harness.getData(0x4F).statusWord == .instructionNotSupported)
    }

    @Test("the management and OTP applications are on the YubiKey profile only", arguments: SimulatedProfile.allCases)
    func yubiKeyOnly(profile: SimulatedProfile) throws {
        let harness = try Self.card(profile)
        let expected: StatusWord = profile == .yubikey ? .success : .fileNotFound
        #expect(try Self.select(harness, Self.managementAID).statusWord == expected)
        #expect(try Self.select(harness, Self.otpAID).statusWord == expected)
    }

    // MARK: OTP

    @Test(
        "OTP: SELECT (7 or 8 bytes) and READ STATUS answer the status, slots unconfigured; serial and device information"
    )
    func otp() throws {
        let harness = try Self.card(.yubikey)
        for aid in [Self.otpAID, Array(Self.otpAID.prefix(7))] {
            let selected = try Self.select(harness, aid)
            try requireSuccess(selected.statusWord)
            #expect(selected.data == [0x05, 0x04, 0x03, 0x00, 0x00, 0x00])
        }
        #expect(try Self.select(harness, Array(Self.otpAID.prefix(6))).statusWord == .fileNotFound)
        #expect(try harness.send(YubiKeyApplications.otpReadStatus, 0, 0).data == [0x05, 0x04, 0x03, 0x00, 0x00, 0x00])
        #expect(try harness.send(YubiKeyApplications.otpCommand, 0x10, 0x00, le: 256).data == [0x01, 0x65, 0xEC, 0x15])
        #expect(
            try harness.send(YubiKeyApplications.otpCommand, 0x13, 0x00, le: 256).data
                == YubiKeyDevice.deviceInformation(serial: 23_456_789))
        // Programming a slot is not modelled.
        #expect(try harness.send(YubiKeyApplications.otpCommand, 0x01, 0x00, [0x00]).statusWord == .incorrectP1P2)
        #expect(try harness.send(0x02, 0x00, 0x00).statusWord == .instructionNotSupported)
    }

    // MARK: Serials

    @Test("YubiKey serials are eight decimal digits, below 2^31; the OpenPGP AID carries them in BCD")
    func serials() throws {
        for _ in 0..<32 {
            let card = try SimulatedCard(stateFile: nil, profile: .yubikey)
            #expect(YubiKeyDevice.serialRange.contains(card.serial))
            #expect(card.serial < 1 << 31)
            let digits = String(card.serial)
            #expect(Hex.encode(Array(card.aid[10..<14])) == digits)
        }
        #expect(
            try SimulatedCard(stateFile: nil, serial: 23_456_789, profile: .yubikey).aid[10..<14] == [
                0x23, 0x45, 0x67, 0x89,
            ])
        // Nine digits do not fit BCD: the serial's own bytes, as on the other profiles.
        #expect(
            try SimulatedCard(stateFile: nil, serial: 0x0C0F_FEE5, profile: .yubikey).aid[10..<14] == [
                0x0C, 0x0F, 0xFE, 0xE5,
            ])
        #expect(try SimulatedCard(stateFile: nil, serial: 23_456_789).aid[10..<14] == [0x01, 0x65, 0xEC, 0x15])
        #expect(YubiKeyDevice.bcd(1) == [0x00, 0x00, 0x00, 0x01])
        #expect(YubiKeyDevice.bcd(99_999_999) == [0x99, 0x99, 0x99, 0x99])
        #expect(YubiKeyDevice.bcd(100_000_000) == nil)
    }

    @Test("OpenPGP GET VERSION: the YubiKey's firmware in BCD; other cards have no such command")
    func openPGPVersion() throws {
        let yubiKey = try Self.card(.yubikey)
        try requireSuccess(yubiKey.select())
        #expect(try yubiKey.send(CardInstruction.getVersion, 0, 0, le: 256).data == [0x05, 0x04, 0x03])
        #expect(try yubiKey.send(CardInstruction.getVersion, 1, 0, le: 256).statusWord == .incorrectP1P2)
        let other = try Self.card(.nitrokey3)
        try requireSuccess(other.select())
        #expect(try other.send(CardInstruction.getVersion, 0, 0, le: 256).statusWord == .instructionNotSupported)
    }
}
