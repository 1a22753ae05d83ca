import Foundation

@testable import TokenpinCore

/// Records of every shape the store holds, for `RecordJSONTests`: PIN only, a token bound through OpenPGP (cv25519,
/// a NIST curve, RSA), PIV (with and without a card-authentication key) and PKCS#11 (with OAEP), a composite slot,
/// locked and failing counters, other attempts, and strings that need escaping. The bytes are not sealed keys (no
/// slot opens), but every size is one the structural check accepts, so the records decode whole.
enum RecordJSONCorpus {
    static let created = Date(timeIntervalSince1970: 1_800_000_000)

    /// Bytes `count` long, different for each `seed`.
    static func bytes(_ count: Int, _ seed: UInt8) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 7) })
    }

    static func slot(_ kind: SlotKind, token: TokenBinding? = nil, seed: UInt8) -> VaultSlot {
        let kdf =
            kind == .pin || kind == .composite
            ? KDFParameters(algorithm: .argon2id13, memoryKiB: 65_536, passes: 3, salt: bytes(16, seed))
            : KDFParameters(algorithm: .blake2b, salt: bytes(16, seed))
        return VaultSlot(
            kind: kind, kdf: kdf, token: token, nonce: bytes(24, seed &+ 1), wrappedKey: bytes(48, seed &+ 2),
            created: created.addingTimeInterval(Double(seed)))
    }

    static func record(user: String = "alice", _ slots: [VaultSlot], mode: VerificationMode = .either)
        -> EnrolmentRecord
    {
        EnrolmentRecord(
            user: user, created: created, policy: .init(mode: mode, fallback: mode == .both ? .deny : .allow),
            counter: RetryCounter(max: 5), slots: slots)
    }

    static var pinOnly: EnrolmentRecord { record([slot(.pin, seed: 1), slot(.recovery, seed: 2)]) }

    static func tokenRecord(_ binding: TokenBinding, composite: Bool = false) -> EnrolmentRecord {
        let slots =
            composite
            ? [slot(.composite, token: binding, seed: 4), slot(.recovery, seed: 2)]
            : [slot(.pin, seed: 1), slot(.recovery, seed: 2), slot(.token, token: binding, seed: 3)]
        return record(slots, mode: composite ? .both : .either)
    }

    static var openPGP: TokenBinding {
        TokenBinding(
            serial: "D2760001240103040006123456780000", cardPublicKey: bytes(32, 9),
            ephemeralPublicKey: bytes(32, 10), reader: "Yubico YubiKey OTP+FIDO+CCID 00 00")
    }

    static var bindings: [TokenBinding] {
        var nist = openPGP
        nist.algorithm = "nistp256"
        nist.cardPublicKey = bytes(65, 11)
        nist.ephemeralPublicKey = bytes(65, 12)
        var rsa = openPGP
        rsa.algorithm = "rsa2048"
        rsa.cardPublicKey = bytes(256, 13)
        rsa.ephemeralPublicKey = bytes(256, 14)
        rsa.cardPublicExponent = Data([1, 0, 1])
        rsa.reader = nil
        var piv = nist
        piv.serial = "piv-guid:00112233445566778899aabbccddeeff"
        piv.application = "piv"
        piv.slot = "9d"
        var pivAuthenticated = piv
        pivAuthenticated.cardAuthentication = CardAuthenticationKey(algorithm: "nistp256", publicKey: bytes(65, 15))
        var pivRSA = rsa
        pivRSA.serial = "piv-serial:12345678"
        pivRSA.application = "piv"
        pivRSA.slot = "82"
        pivRSA.cardAuthentication = CardAuthenticationKey(
            algorithm: "rsa2048", publicKey: bytes(256, 16), exponent: Data([1, 0, 1]))
        var pkcs11 = rsa
        pkcs11.serial = "piv-key:0011223344556677"
        pkcs11.application = "pkcs11"
        pkcs11.uri = "pkcs11:token=My%20Token;id=%01;type=private"
        pkcs11.rsaPadding = "oaep-sha1"
        var pkcs11EC = nist
        pkcs11EC.application = "pkcs11"
        pkcs11EC.uri = "pkcs11:model=PKCS%2315%20emulated;serial=1234;id=%02"
        return [openPGP, nist, rsa, piv, pivAuthenticated, pivRSA, pkcs11, pkcs11EC]
    }

    /// Strings a reader name, a serial, a service or a host could hold that JSON must escape or keep as they are.
    static var oddStrings: [String] {
        var controls = ""
        for byte in 0..<0x20 { controls.unicodeScalars.append(Unicode.Scalar(UInt8(byte))) }
        return [
            "quote \" and backslash \\ and slash / and \\/", controls, "del \u{7F}", "é ß € 😀 \u{2028}\u{2029}\u{FEFF}",
            "", " leading and trailing ", "\"", "\\", "/", "{\"a\": [1, 2]}", "\u{0}", "tab\there\nnewline\r",
        ]
    }

    static var otherAttempts: [OtherAttempts] {
        var empty = OtherAttempts()
        empty.failures = 0
        var remote = OtherAttempts()
        remote.consume(
            .init(class: .remote, service: "sshd", invokerUID: 0, rhost: "203.0.113.9", at: created), maximum: 5)
        var locked = OtherAttempts()
        for index in 0..<5 {
            locked.consume(
                .init(
                    class: .other, service: index == 4 ? nil : "su", invokerUID: UInt32.max, rhost: nil,
                    at: created.addingTimeInterval(Double(index))), maximum: 5)
        }
        return [empty, remote, locked]
    }

    /// Every shape, each a record that decodes.
    static var records: [EnrolmentRecord] {
        var all = [pinOnly] + bindings.map { tokenRecord($0) } + [tokenRecord(bindings[4], composite: true)]
        var counters = pinOnly
        counters.counter.consumeAttempt(at: created.addingTimeInterval(60))
        counters.counter.consumeAttempt(at: created.addingTimeInterval(120))
        counters.counter.countRecoveryFailure()
        all.append(counters)
        var locked = tokenRecord(openPGP)
        for minute in 1...5 { locked.counter.consumeAttempt(at: created.addingTimeInterval(Double(minute * 60))) }
        all.append(locked)
        for attempts in otherAttempts {
            var record = tokenRecord(bindings[3])
            record.otherAttempts = attempts
            all.append(record)
        }
        for (index, text) in oddStrings.enumerated() {
            var binding = openPGP
            binding.reader = text
            var record = tokenRecord(binding)
            record.otherAttempts = OtherAttempts()
            record.otherAttempts?.consume(
                .init(class: .remote, service: text, invokerUID: UInt32(index), rhost: text, at: created), maximum: 3)
            all.append(record)
        }
        var updated = pinOnly
        updated.updated = Date(timeIntervalSince1970: 4_102_444_799)  // 2099-12-31T23:59:59Z
        all.append(updated)
        return all
    }

    /// Records that only encode as the store would never keep them (odd users, bounds broken, old dates), for the
    /// byte-for-byte comparison of the writers; they decode to a refusal, which the two readers must agree on too.
    static var unusual: [EnrolmentRecord] {
        var all: [EnrolmentRecord] = []
        for text in oddStrings { all.append(record(user: text, [slot(.pin, seed: 1)])) }
        var numbers = pinOnly
        numbers.version = -7
        numbers.counter.remaining = Int.min
        numbers.counter.max = Int.max
        numbers.slots[0].kdf.memoryKiB = -1
        all.append(numbers)
        var dates = pinOnly
        dates.created = Date(timeIntervalSince1970: -12_219_292_800)  // 1582, Foundation's own ISO 8601
        dates.updated = Date(timeIntervalSince1970: 1_800_000_000.75)  // a fraction, rounded down
        dates.counter.lockedAt = Date(timeIntervalSince1970: -1)
        all.append(dates)
        all.append(record([]))
        var serial = tokenRecord(openPGP)
        serial.slots[2].token?.serial = oddStrings[1]
        all.append(serial)
        return all
    }
}
