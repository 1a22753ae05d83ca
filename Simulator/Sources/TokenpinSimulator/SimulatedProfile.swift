import TokenpinAPDU

/// Which card the simulator is, chosen with `tokenpin-sim --profile` or `SimulatedCard(profile:)`: the
/// applications it carries and, for OpenPGP, the device it behaves like (`OpenPGPTraits`).
package enum SimulatedProfile: String, Sendable, CaseIterable {
    /// An OpenPGP card 3.4 alone (the default).
    case openpgp
    /// A PIV card (SP 800-73-4) alone: no OpenPGP application, no YubiKey extensions.
    case pivCard = "piv-card"
    /// A YubiKey 5 NFC (`YubiKeyDevice`): OpenPGP and PIV side by side, SELECT by AID picking one, with the
    /// YubiKey PIV extensions (version, serial, metadata, management key, retries, reset), the management and OTP
    /// applications, and an eight-digit serial. `yubikey` is accepted for it too.
    case yubikey = "yubikey5"
    /// A Nitrokey 3 (opcard): OpenPGP alone, KDF-DO available, PINs kept across SELECT.
    case nitrokey3
    /// A Gnuk token with cv25519 keys set: OpenPGP alone, short APDUs with chaining, the 6-byte AID only.
    case gnuk

    /// The profile a name selects, aliases included (`yubikey` for `yubikey5`).
    package init?(name: String) {
        if name == "yubikey" {
            self = .yubikey
        } else {
            self.init(rawValue: name)
        }
    }

    /// Every name `init(name:)` takes.
    package static var names: [String] { allCases.map(\.rawValue) + ["yubikey"] }

    /// Whether SELECT can pick the OpenPGP application.
    package var hasOpenPGP: Bool { self != .pivCard }
    /// Whether SELECT can pick the PIV application.
    package var hasPIV: Bool { self == .pivCard || self == .yubikey }
    /// Whether the card is a YubiKey: the PIV application answers the YubiKey instructions (`FD`, `F8`, `F7`,
    /// `FF`, `FA`, `FB`) and the management and OTP applications are there.
    package var hasYubiKeyExtensions: Bool { self == .yubikey }

    /// How the OpenPGP application presents itself and behaves.
    package var openPGPTraits: OpenPGPTraits {
        switch self {
        case .openpgp, .pivCard: .reference
        case .yubikey: .yubiKey5
        case .nitrokey3: .nitrokey3
        case .gnuk: .gnuk
        }
    }

    /// The answer to reset: the device's (a YubiKey 5's over USB for `yubikey5`, naming it in the historical
    /// bytes after card capabilities announcing chaining and extended length); the reference card's for
    /// `openpgp` and `piv-card`.
    package var atr: [UInt8] { openPGPTraits.atr }
}
