import TokenpinAPDU

/// The fixed facts the simulated card announces: AID, ATR, capabilities, limits.
///
/// Modelled on a YubiKey 5 running OpenPGP 3.4: extended length and chaining announced in the historical
/// bytes and `7F66`, key import, changeable algorithm attributes, GET CHALLENGE, private DOs.
package enum CardProfile {
    /// The OpenPGP application's registered identifier, `D2 76 00 01 24 01` (RID + PIX application).
    package static let applicationPrefix: [UInt8] = [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01]
    /// Spec version 3.4 as the AID carries it.
    package static let specVersion: [UInt8] = [0x03, 0x04]
    /// The manufacturer ID in the AID: `FF FE` is reserved for test cards and simulators.
    package static let manufacturer: UInt16 = 0xFFFE

    /// The historical bytes: category `00`, card capabilities `73` announcing DF selection by full and partial
    /// name, command chaining and extended Lc/Le, then the status indicator (operational, `90 00`).
    /// ISO/IEC 7816-4, §8.1.1; OpenPGP card 3.4.1, §6.
    package static let historicalBytes: [UInt8] = [0x00, 0x73, 0xC0, 0x01, 0xC0, 0x05, 0x90, 0x00]

    /// A T=1 ATR: TS `3B`, T0 (TD1 and the historical byte count), TD1 (T=1, TD2 follows), TD2 (TA3, TB3,
    /// T=1), IFSC 254, BWI/CWI, the historical bytes and the check byte TCK. ISO/IEC 7816-3, §8.2.
    package static let atr: [UInt8] = {
        var bytes: [UInt8] = [0x3B, 0x80 | UInt8(historicalBytes.count), 0x81, 0x31, 0xFE, 0x15]
        bytes += historicalBytes
        bytes.append(bytes.dropFirst().reduce(0, ^))
        return bytes
    }()

    /// The largest command data field the card takes, announced in `7F66`.
    package static let maxCommandData = 2048
    /// The largest response the card sends in one extended APDU, announced in `7F66`.
    package static let maxResponseData = 2048
    /// The largest GET CHALLENGE, announced in `C0`.
    package static let maxChallenge = 2048
    /// The largest cardholder certificate, announced in `C0`.
    package static let maxCertificate = 2048
    /// The largest private DO, login data or URL, announced in `C0`.
    package static let maxSpecialDO = 255
    /// The largest chain the card reassembles.
    package static let maxChainedData = 4096
    /// Retry counters start here.
    package static let maxRetries = 3
    /// Allowed PW1 lengths.
    package static let pw1Lengths = 6...127
    /// Allowed PW3 lengths.
    package static let pw3Lengths = 8...127
    /// Allowed Reset Code lengths.
    package static let resetCodeLengths = 8...127

    /// Extended capabilities `C0`: GET CHALLENGE, key import, PW status changeable, private DOs, changeable
    /// algorithm attributes, KDF-DO; no secure messaging; then the size limits. OpenPGP card 3.4.1, §4.4.3.7.
    package static let extendedCapabilities: [UInt8] = [
        0x7D, 0x00,
        UInt8(maxChallenge >> 8), UInt8(maxChallenge & 0xFF),
        UInt8(maxCertificate >> 8), UInt8(maxCertificate & 0xFF),
        UInt8(maxSpecialDO >> 8), UInt8(maxSpecialDO & 0xFF),
        0x00, 0x00,
    ]

    /// Extended length information `7F66` with its outer tag: two `02 02` integers. ISO/IEC 7816-4, §12.7.1.
    package static let extendedLengthInformation: [UInt8] = TLV(
        tag: 0x7F66,
        value: [
            0x02, 0x02, UInt8(maxCommandData >> 8), UInt8(maxCommandData & 0xFF),
            0x02, 0x02, UInt8(maxResponseData >> 8), UInt8(maxResponseData & 0xFF),
        ]
    ).encoded

    /// General feature management `7F74` with its outer tag: a button (touch) is present.
    package static let generalFeatureManagement: [UInt8] = TLV(tag: 0x7F74, value: [0x81, 0x01, 0x20]).encoded

    /// What the card announces for long APDUs, as a `CardConnection` should use it.
    package static let lengthCapabilities = LengthCapabilities(
        extendedLength: true, commandChaining: true,
        maxCommandData: maxCommandData,
        maxResponseData: maxResponseData)
}

/// The instruction bytes the card understands. OpenPGP card 3.4.1, §7.2.
package enum CardInstruction {
    /// `A4`: SELECT.
    package static let select: UInt8 = 0xA4
    /// `CA`: GET DATA.
    package static let getData: UInt8 = 0xCA
    /// `A5`: SELECT DATA (a cardholder certificate instance).
    package static let selectData: UInt8 = 0xA5
    /// `CC`: GET NEXT DATA (the next cardholder certificate instance).
    package static let getNextData: UInt8 = 0xCC
    /// `F1`: GET VERSION, the YubiKey's firmware version (yubikit).
    package static let getVersion: UInt8 = 0xF1
    /// `7F21`: the cardholder certificate, the one data object with instances (AUT, DEC, SIG).
    static let cardholderCertificate: UInt32 = 0x7F21
    /// `DA`: PUT DATA.
    package static let putData: UInt8 = 0xDA
    /// `DB`: PUT DATA with odd INS, key import with an extended header list.
    package static let putDataOdd: UInt8 = 0xDB
    /// `20`: VERIFY.
    package static let verify: UInt8 = 0x20
    /// `24`: CHANGE REFERENCE DATA.
    package static let changeReferenceData: UInt8 = 0x24
    /// `2C`: RESET RETRY COUNTER.
    package static let resetRetryCounter: UInt8 = 0x2C
    /// `47`: GENERATE ASYMMETRIC KEY PAIR.
    package static let generateKeyPair: UInt8 = 0x47
    /// `2A`: PERFORM SECURITY OPERATION.
    package static let performSecurityOperation: UInt8 = 0x2A
    /// `88`: INTERNAL AUTHENTICATE.
    package static let internalAuthenticate: UInt8 = 0x88
    /// `84`: GET CHALLENGE.
    package static let getChallenge: UInt8 = 0x84
    /// `C0`: GET RESPONSE.
    package static let getResponse: UInt8 = 0xC0
    /// `E6`: TERMINATE DF.
    package static let terminateDF: UInt8 = 0xE6
    /// `44`: ACTIVATE FILE.
    package static let activateFile: UInt8 = 0x44
}

// Internal, so that a later public constant of the same name in TokenpinAPDU cannot clash with it.
extension StatusWord {
    /// `6A 81`: function not supported (the simulator has no RSA).
    static let functionNotSupported = StatusWord(rawValue: 0x6A81)
}
