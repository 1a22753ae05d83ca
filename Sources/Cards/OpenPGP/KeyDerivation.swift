package import TokenpinAPDU
package import TokenpinCardCrypto
package import TokenpinCore

/// The card's key derivation function data object, `F9` (KDF-DO): when it is on, the card stores and
/// compares an iterated salted S2K digest of each PIN instead of the PIN, and hosts send the digest.
///
/// OpenPGP card 3.4.1, §4.3.2: `81` algorithm (`00` none, `03` iterated salted S2K), `82` hash (`08` SHA-256,
/// `0A` SHA-512), `83` byte count (4 bytes), `84`/`85`/`86` 8-byte salts for PW1, the Resetting Code and PW3
/// (`84` stands in for an absent `85` or `86`), `87`/`88` digests of the default PW1 and PW3.
package struct KeyDerivation: Sendable, Equatable {
    /// Which secret a digest is for: each has its own salt.
    package enum Secret: Sendable {
        /// PW1, the user PIN (salt `84`).
        case userPIN
        /// The Resetting Code (salt `85`, else `84`).
        case resettingCode
        /// PW3, the admin PIN (salt `86`, else `84`).
        case adminPIN
    }

    /// `03`: iterated salted S2K.
    package static let iteratedSaltedS2K: UInt8 = 0x03

    /// The hash.
    package let hash: IteratedSaltedS2K.Hash
    /// The number of bytes hashed.
    package let count: Int
    /// The salts by secret.
    let salts: (user: [UInt8], resettingCode: [UInt8]?, admin: [UInt8]?)

    /// Parses the value of `F9`: nil when the KDF is off (`81 01 00`, or empty), the parameters when it is on.
    ///
    /// Throws `APDUError` for an algorithm or hash tokenpin does not know, a missing count or PW1 salt, and
    /// counts out of range.
    package static func parse(_ bytes: [UInt8]) throws(APDUError) -> KeyDerivation? {
        guard !bytes.isEmpty else { return nil }
        let objects = try TLV.parseAll(bytes)
        func value(_ tag: UInt32) -> [UInt8]? { objects.first { $0.tag == tag }?.value }
        guard let algorithm = value(0x81), algorithm.count == 1 else {
            throw APDUError(.invalidStructure, "KDF-DO without an algorithm (81)")
        }
        if algorithm[0] == 0x00 { return nil }
        guard algorithm[0] == iteratedSaltedS2K else {
            throw APDUError(.invalidStructure, "KDF-DO algorithm \(Hex.encode(algorithm)) is not iterated salted S2K")
        }
        let hash: IteratedSaltedS2K.Hash
        switch value(0x82) {
        case [0x08]?: hash = .sha256
        case [0x0A]?: hash = .sha512
        default: throw APDUError(.invalidStructure, "KDF-DO hash is neither SHA-256 (08) nor SHA-512 (0A)")
        }
        guard let countBytes = value(0x83), countBytes.count == 4 else {
            throw APDUError(.invalidLength, "KDF-DO byte count (83) must have 4 bytes")
        }
        let count = countBytes.reduce(0) { $0 << 8 | Int($1) }
        guard (1...IteratedSaltedS2K.maximumCount).contains(count) else {
            throw APDUError(.invalidLength, "KDF-DO byte count \(count) is out of range")
        }
        guard let user = value(0x84), (1...32).contains(user.count) else {
            throw APDUError(.invalidStructure, "KDF-DO without a PW1 salt (84)")
        }
        return KeyDerivation(hash: hash, count: count, salts: (user, value(0x85), value(0x86)))
    }

    /// The digest the card expects for `pin`, in guarded memory.
    package func digest(of pin: borrowing SecretBytes, for secret: Secret) throws(OpenPGPError) -> SecretBytes {
        let salt: [UInt8]
        switch secret {
        case .userPIN: salt = salts.user
        case .resettingCode: salt = salts.resettingCode ?? salts.user
        case .adminPIN: salt = salts.admin ?? salts.user
        }
        do {
            return try IteratedSaltedS2K.derive(pin: pin, salt: salt, count: count, hash: hash)
        } catch {
            throw .invalidArgument("the PIN could not be hashed for the card's KDF-DO: \(error.detail)")
        }
    }

    package static func == (lhs: KeyDerivation, rhs: KeyDerivation) -> Bool {
        lhs.hash == rhs.hash && lhs.count == rhs.count && lhs.salts.user == rhs.salts.user
            && lhs.salts.resettingCode == rhs.salts.resettingCode && lhs.salts.admin == rhs.salts.admin
    }
}

extension OpenPGPSession {
    /// Reads the KDF-DO when the card announces the KDF in its extended capabilities (`C0` bit `01`): one GET
    /// DATA `00 CA 00 F9`; nil (and no APDU) otherwise, or when the KDF is off.
    ///
    /// OpenPGP card 3.4.1, §4.3.2 and §7.2.6.
    package func keyDerivation(_ data: ApplicationRelatedData) throws(OpenPGPError) -> KeyDerivation? {
        guard data.extendedCapabilities?.supportsKDF ?? false else { return nil }
        let value: [UInt8]
        do {
            value = try getData(DataObject.keyDerivationFunction)
        } catch .referencedDataNotFound {
            return nil
        }
        // Some cards answer with the F9 object itself, others with its value.
        let inner =
            (try? TLV.parseOne(value)).flatMap { $0.tag == DataObject.keyDerivationFunction ? $0.value : nil } ?? value
        do {
            return try KeyDerivation.parse(inner)
        } catch {
            throw .malformed(error)
        }
    }
}

extension OpenPGPSession {
    /// VERIFY with the PIN as the card expects it: its KDF-DO digest when `keyDerivation` is set, else the PIN.
    ///
    /// OpenPGP card 3.4.1, §4.3.2 and §7.2.2. The digest is wiped before this returns.
    package func verify(
        _ reference: PasswordReference, pin: borrowing SecretBytes,
        keyDerivation: KeyDerivation?
    ) throws(OpenPGPError) {
        guard let keyDerivation else { return try verify(reference, pin: pin) }
        let digest = try keyDerivation.digest(of: pin, for: reference == .pw3 ? .adminPIN : .userPIN)
        try verify(reference, pin: digest)
    }

    /// CHANGE REFERENCE DATA with both PINs as the card expects them (digests when `keyDerivation` is set).
    package func changeReferenceData(
        _ reference: PasswordReference, current: borrowing SecretBytes,
        new: borrowing SecretBytes, keyDerivation: KeyDerivation?
    ) throws(OpenPGPError) {
        guard let keyDerivation else { return try changeReferenceData(reference, current: current, new: new) }
        let secret: KeyDerivation.Secret = reference == .pw3 ? .adminPIN : .userPIN
        let currentDigest = try keyDerivation.digest(of: current, for: secret)
        let newDigest = try keyDerivation.digest(of: new, for: secret)
        try changeReferenceData(reference, current: currentDigest, new: newDigest)
    }

    /// RESET RETRY COUNTER with the Resetting Code, both secrets as the card expects them.
    package func resetRetryCounter(
        resetCode: borrowing SecretBytes, newPIN: borrowing SecretBytes,
        keyDerivation: KeyDerivation?
    ) throws(OpenPGPError) {
        guard let keyDerivation else { return try resetRetryCounter(resetCode: resetCode, newPIN: newPIN) }
        let codeDigest = try keyDerivation.digest(of: resetCode, for: .resettingCode)
        let pinDigest = try keyDerivation.digest(of: newPIN, for: .userPIN)
        try resetRetryCounter(resetCode: codeDigest, newPIN: pinDigest)
    }

    /// RESET RETRY COUNTER after PW3, the new PIN as the card expects it.
    package func resetRetryCounter(newPIN: borrowing SecretBytes, keyDerivation: KeyDerivation?) throws(OpenPGPError) {
        guard let keyDerivation else { return try resetRetryCounter(newPIN: newPIN) }
        try resetRetryCounter(newPIN: keyDerivation.digest(of: newPIN, for: .userPIN))
    }
}
