import FoundationEssentials
internal import TokenpinAPDU
import TokenpinCardCrypto
internal import TokenpinCore
import TokenpinPIV

extension PIVToken {
    // MARK: Key generation (PIVToken.swift holds the rest)

    /// The management key is no PIN: it is never typed on a keypad (`adminKeypad` is not used).
    func generateKey(
        slot name: String?, assumeYes: Bool, adminKeypad: CardKeypad?, _ interaction: some Interaction
    ) throws -> TokenCardKey {
        let card = self.card
        let named = try name.map { (name) throws(TokenCardError) in try Self.slot(name) }
        if let named, !named.isKeyManagement {
            throw TokenCardError.unusable(
                "slot \(Self.slotName(named)) is not for key management; generate into 9d or 82-95")
        }
        // The target slot and what it holds now; the management key's algorithm and whether it is the factory one.
        let (slot, current, managementAlgorithm) = try Self.map {
            () throws(PIVError) -> (PIVSlot?, PIVSlotContent, BlockCiphers.Algorithm) in
            try card.transaction { session throws(PIVError) in
                var algorithm = BlockCiphers.Algorithm.tripleDES
                if try card.hasMetadata(session) { algorithm = try session.managementKeyMetadata().algorithm }
                if let named { return (named, try card.content(of: named, session), algorithm) }
                for number in 1...20 {
                    guard let retired = PIVSlot.retired(number) else { continue }
                    if try card.content(of: retired, session) == .empty { return (retired, .empty, algorithm) }
                }
                return (nil, .empty, algorithm)
            }
        }
        guard let slot else {
            throw TokenCardError.unusable("every retired key slot (82-95) holds a key; name one with --slot")
        }
        let slotName = Self.slotName(slot)
        let text = try interaction.readSecret(.managementKey(card: promptName))
        let key = try Self.managementKey(fromHex: text, algorithm: managementAlgorithm)
        let isDefault = Self.defaultManagementKey.withUnsafeBytes { key.isEqual(to: $0) }
        if isDefault && !assumeYes {
            throw ServiceError.usage(
                "the card still has the factory management key (010203...08 three times), which anyone can use to "
                    + "replace its keys; set your own (yubico-piv-tool -a set-mgm-key) or add --yes to use it")
        }
        // The management key is checked on the card before anything is shown, confirmed or written.
        try Self.map { () throws(PIVError) in
            try card.transaction { session throws(PIVError) in
                try session.authenticate(managementKey: key, algorithm: managementAlgorithm)
            }
        }
        if current != .empty, !assumeYes {
            let question =
                "Card \(label) holds a key in slot \(slotName) (\(Self.describe(current))). --generate-key replaces "
                + "it with a new P-256 key: whatever used the old key (certificates, encrypted files) can no longer "
                + "use this card."
            guard try interaction.confirmTyped(question, word: PINService.replaceWord) else {
                throw ServiceError.cancelled
            }
        }
        let publicKey = try Self.map { () throws(PIVError) -> PIVPublicKey in
            try card.transaction { session throws(PIVError) in
                try session.authenticate(managementKey: key, algorithm: managementAlgorithm)
                return try session.generateKey(in: slot, algorithm: Self.generatedAlgorithm)
            }
        }
        return try Self.cardKey(.key(publicKey, subject: nil), in: slot)
    }

    /// A management key typed as hex (spaces and colons allowed) in guarded memory, of `algorithm`'s length.
    static func managementKey(fromHex text: borrowing SecretBytes, algorithm: BlockCiphers.Algorithm)
        throws(TokenCardError) -> SecretBytes
    {
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        let separators: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: ":")]
        let digits: Int? = text.withUnsafeBytes { bytes in
            var count = 0
            for byte in bytes where !separators.contains(byte) {
                guard value(byte) != nil else { return nil }
                count += 1
            }
            return count
        }
        guard let digits, digits == 2 * algorithm.keyLength else {
            throw .refused(
                "a \(algorithm.name) management key is \(2 * algorithm.keyLength) hex digits "
                    + "(\(algorithm.keyLength) bytes); nothing was sent to the card")
        }
        return SecretBytes(count: algorithm.keyLength) { out in
            text.withUnsafeBytes { bytes in
                var index = 0
                var high: UInt8?
                for byte in bytes where !separators.contains(byte) {
                    let nibble = value(byte) ?? 0
                    if let first = high {
                        out[index] = first << 4 | nibble
                        index += 1
                        high = nil
                    } else {
                        high = nibble
                    }
                }
            }
        }
    }
}
