import TokenpinAPDU

/// Which applications the simulated card carries, chosen with `tokenpin-sim --profile`.
public enum SimulatedProfile: String, Sendable, CaseIterable {
    /// An OpenPGP card 3.4 alone (the default).
    case openpgp
    /// A PIV card (SP 800-73-4) alone: no OpenPGP application, no YubiKey extensions.
    case pivCard = "piv-card"
    /// A YubiKey 5: OpenPGP and PIV side by side, SELECT by AID picking one, with the YubiKey PIV extensions
    /// (version, serial, metadata, management key, retries, reset).
    case yubikey

    /// Whether SELECT can pick the OpenPGP application.
    public var hasOpenPGP: Bool { self != .pivCard }
    /// Whether SELECT can pick the PIV application.
    public var hasPIV: Bool { self != .openpgp }
    /// Whether the PIV application answers the YubiKey instructions (`FD`, `F8`, `F7`, `FF`, `FA`, `FB`).
    public var hasYubiKeyExtensions: Bool { self == .yubikey }

    /// The answer to reset: a YubiKey 5's (USB) for `yubikey`, which names it in the historical bytes
    /// (`57` "YubiKey") after card capabilities announcing chaining and extended length; the OpenPGP
    /// profile's otherwise.
    public var atr: [UInt8] {
        switch self {
        case .openpgp, .pivCard: CardProfile.atr
        case .yubikey: PIVProfile.yubiKeyATR
        }
    }
}
