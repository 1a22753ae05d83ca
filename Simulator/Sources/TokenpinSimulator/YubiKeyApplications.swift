import TokenpinAPDU

/// The YubiKey's own applications beside OpenPGP and PIV, on the `yubikey5` profile: the management application
/// (device information for ykman and yubikit) and the OTP application (its status, the serial). Neither keeps
/// state of its own: what they report comes from `YubiKeyDevice` and the card's serial.
///
/// Commands as yubikit (`yubikit/management.py`, `yubikit/yubiotp.py`) and yubico-piv-tool (`lib/ykpiv.c`) send
/// them; what is modelled is in Simulator/README.md ("YubiKey management and OTP").
struct YubiKeyApplications: Sendable, Equatable {
    /// The one of the two that SELECT picked, if any.
    enum Application: Sendable, Equatable {
        case management
        case otp
    }

    /// The management application's AID `A0 00 00 05 27 47 11 17`, selected whole.
    static let managementAID: [UInt8] = [0xA0, 0x00, 0x00, 0x05, 0x27, 0x47, 0x11, 0x17]
    /// The OTP application's AID `A0 00 00 05 27 20 01 01`: yubico-piv-tool sends all eight bytes, yubikit the
    /// first seven.
    static let otpAID: [UInt8] = [0xA0, 0x00, 0x00, 0x05, 0x27, 0x20, 0x01, 0x01]

    /// Management: READ CONFIG `00 1D page 00` (device information), WRITE CONFIG `1C`, SET MODE `16`.
    static let readConfig: UInt8 = 0x1D
    /// OTP: `00 01 slot 00` (a configuration slot, or `10` serial, `13` device information), READ STATUS `03`.
    static let otpCommand: UInt8 = 0x01
    static let otpReadStatus: UInt8 = 0x03
    static let otpSerialSlot: UInt8 = 0x10
    static let otpDeviceInformationSlot: UInt8 = 0x13

    var selected: Application?
    /// The card serial, reported by both applications.
    let serial: UInt32

    init(serial: UInt32) { self.serial = serial }

    /// The application a SELECT by AID names, if it is one of these two.
    static func application(named data: [UInt8]) -> Application? {
        if data == managementAID { return .management }
        if data.count >= 7 && otpAID.starts(with: data) { return .otp }
        return nil
    }

    /// The OTP status SELECT and READ STATUS answer: firmware version, programming sequence `00` and touch level
    /// `00 00`, as a key whose two slots are unconfigured reports it.
    static var otpStatus: [UInt8] { YubiKeyDevice.firmwareVersion + [0x00, 0x00, 0x00] }

    /// SELECT of one of the two: the management application answers its version string (as a YubiKey 5 does:
    /// "Virtual mgr - FW version 5.4.3"), the OTP application its status.
    mutating func select(_ application: Application) -> Reply {
        selected = application
        switch application {
        case .management:
            let version = YubiKeyDevice.firmwareVersion.map(String.init).joined(separator: ".")
            return Reply(.success, data: Array("Virtual mgr - FW version \(version)".utf8))
        case .otp:
            return Reply(.success, data: Self.otpStatus)
        }
    }

    /// Runs one command for the selected application.
    func handle(_ command: CommandAPDU) -> Reply {
        switch selected {
        case .management?: management(command)
        case .otp?: otp(command)
        case nil: Reply(.instructionNotSupported)
        }
    }

    /// READ CONFIG page 0 is the whole device information (firmware 5.4.3 has one page). Writing the
    /// configuration (`1C`, `16`) and the device reset (`1F`) are not modelled and answer `6D00`.
    private func management(_ command: CommandAPDU) -> Reply {
        guard command.ins == Self.readConfig else { return Reply(.instructionNotSupported) }
        guard command.p1 == 0, command.p2 == 0 else { return Reply(.incorrectP1P2) }
        guard command.data.isEmpty else { return Reply(.wrongLength) }
        return Reply(.success, data: YubiKeyDevice.deviceInformation(serial: serial))
    }

    /// READ STATUS, the serial (`01 10`) and the device information (`01 13`); programming a slot is not
    /// modelled (`6A86`, the slot cannot be written).
    private func otp(_ command: CommandAPDU) -> Reply {
        switch command.ins {
        case Self.otpReadStatus:
            guard command.p1 == 0, command.p2 == 0 else { return Reply(.incorrectP1P2) }
            return Reply(.success, data: Self.otpStatus)
        case Self.otpCommand:
            guard command.p2 == 0 else { return Reply(.incorrectP1P2) }
            switch command.p1 {
            case Self.otpSerialSlot: return Reply(.success, data: YubiKeyDevice.bigEndian(serial))
            case Self.otpDeviceInformationSlot:
                return Reply(.success, data: YubiKeyDevice.deviceInformation(serial: serial))
            default: return Reply(.incorrectP1P2)
            }
        default:
            return Reply(.instructionNotSupported)
        }
    }
}
