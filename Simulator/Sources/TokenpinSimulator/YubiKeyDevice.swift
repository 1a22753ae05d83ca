import TokenpinAPDU
import TokenpinCore

/// The YubiKey 5 NFC the `yubikey5` profile is, as its management application reports it: firmware, form factor,
/// the applications it supports and has enabled per transport, its flags. The bytes and their meaning are
/// yubikit's (`yubikit/management.py`, `DeviceInfo.parse_tlvs`) and the device information Yubico's .NET SDK
/// documents for a YubiKey 5 (`application-otp/commands-get-device-info.md`); which values are modelled and which
/// are the simulator's own is in Simulator/README.md ("YubiKey management and OTP").
package enum YubiKeyDevice {
    /// The firmware version every application reports (PIV GET VERSION, OpenPGP GET VERSION, management, OTP):
    /// 5.4.3, which has AES management keys and metadata, and keeps the 3DES factory management key.
    package static let firmwareVersion: [UInt8] = [0x05, 0x04, 0x03]

    /// The lowest and highest serial a simulated YubiKey is given: eight decimal digits, as YubiKey 5 serials
    /// have, so the serial fits the OpenPGP AID in BCD and stays below 2^31 (clients print it as a signed int).
    package static let serialRange: ClosedRange<UInt32> = 10_000_000...99_999_999

    /// Capability bits (yubikit `CAPABILITY`): Yubico OTP, FIDO U2F, the CCID interface, OpenPGP, PIV, OATH,
    /// FIDO2.
    package enum Capability {
        package static let otp: UInt16 = 0x0001
        package static let u2f: UInt16 = 0x0002
        package static let ccid: UInt16 = 0x0004
        package static let openPGP: UInt16 = 0x0008
        package static let piv: UInt16 = 0x0010
        package static let oath: UInt16 = 0x0020
        package static let fido2: UInt16 = 0x0200
    }

    /// What a YubiKey 5 NFC supports over USB and NFC: OTP, U2F, CCID, OpenPGP, PIV, OATH, FIDO2 (`02 3F`, as
    /// in Yubico's device-information example).
    package static let supportedCapabilities: UInt16 =
        Capability.otp | Capability.u2f | Capability.ccid | Capability.openPGP | Capability.piv | Capability.oath
        | Capability.fido2
    /// What the simulated key has enabled, on both transports: exactly the applications it carries (OTP, OpenPGP
    /// and PIV over the CCID interface), so a client never sees an application enabled that SELECT cannot find.
    package static let enabledCapabilities: UInt16 =
        Capability.otp | Capability.ccid | Capability.openPGP | Capability.piv

    /// Form factor `01`: a USB-A keychain (the YubiKey 5 NFC).
    package static let formFactor: UInt8 = 0x01
    /// Device flags: neither remote wakeup (`40`) nor touch eject (`80`).
    package static let deviceFlags: UInt8 = 0x00
    /// The OTP challenge-response timeout in seconds (the factory 15).
    package static let challengeResponseTimeout: UInt8 = 0x0F

    /// Device information tags. yubikit `management.py`.
    enum Tag {
        static let usbSupported: UInt32 = 0x01
        static let serial: UInt32 = 0x02
        static let usbEnabled: UInt32 = 0x03
        static let formFactor: UInt32 = 0x04
        static let version: UInt32 = 0x05
        static let autoEjectTimeout: UInt32 = 0x06
        static let challengeResponseTimeout: UInt32 = 0x07
        static let deviceFlags: UInt32 = 0x08
        static let configurationLock: UInt32 = 0x0A
        static let nfcSupported: UInt32 = 0x0D
        static let nfcEnabled: UInt32 = 0x0E
    }

    /// The device information READ CONFIG (management) and `01 13` (OTP) answer: one length byte, then the TLVs.
    package static func deviceInformation(serial: UInt32) -> [UInt8] {
        let tlvs = [
            TLV(tag: Tag.usbSupported, value: bigEndian(supportedCapabilities)),
            TLV(tag: Tag.serial, value: bigEndian(serial)),
            TLV(tag: Tag.usbEnabled, value: bigEndian(enabledCapabilities)),
            TLV(tag: Tag.formFactor, value: [formFactor]),
            TLV(tag: Tag.version, value: firmwareVersion),
            TLV(tag: Tag.autoEjectTimeout, value: [0x00, 0x00]),
            TLV(tag: Tag.challengeResponseTimeout, value: [challengeResponseTimeout]),
            TLV(tag: Tag.deviceFlags, value: [deviceFlags]),
            TLV(tag: Tag.nfcSupported, value: bigEndian(supportedCapabilities)),
            TLV(tag: Tag.nfcEnabled, value: bigEndian(enabledCapabilities)),
            TLV(tag: Tag.configurationLock, value: [0x00]),
        ].flatMap(\.encoded)
        return [UInt8(tlvs.count)] + tlvs
    }

    /// A serial in `serialRange`, drawn with libsodium.
    static func randomSerial() -> UInt32 {
        serialRange.lowerBound + SecureRandom.uniform(serialRange.upperBound - serialRange.lowerBound + 1)
    }

    /// `value` as 4 bytes, most significant first.
    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    private static func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    /// The serial's eight decimal digits in BCD, as a YubiKey's OpenPGP AID carries it (yubikit
    /// `OpenPgpAid.serial`); nil when the serial has more than eight digits.
    static func bcd(_ serial: UInt32) -> [UInt8]? {
        guard serial <= 99_999_999 else { return nil }
        var digits = serial
        var bytes = [UInt8](repeating: 0, count: 4)
        for index in (0..<4).reversed() {
            bytes[index] = UInt8(digits % 10) | UInt8((digits / 10) % 10) << 4
            digits /= 100
        }
        return bytes
    }
}
