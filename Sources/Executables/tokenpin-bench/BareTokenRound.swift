import TokenpinAPDU
import TokenpinCore
import TokenpinOpenPGP
import TokenpinReaders
import TokenpinService

/// The APDUs of one token verify sent bare, for `bench --token` to time them against tokenpin's verify: through the
/// same readers, open, two transactions, close with a reset; encoded as the session sends them (GET DATA with an
/// extended Le, or a short one (00) to a card that announces no extended length (Gnuk)).
///
/// Two transactions, as tokenpin's verify has: the card PIN is asked between reading the tries left (OpenPGP:
/// SELECT, GET DATA; PIV: SELECT, the CHUID, the tries query) and VERIFY, and no transaction is held while a person
/// types. The VERIFY data (the card PIN, or its digest) is wiped when the round is released.
final class BareTokenRound {
    let reader: String
    let cards: any CardReaders
    let time: SystemTimeSource
    /// A PIV binding: its own APDUs (PIVBench.swift), and no OpenPGP traits to read.
    let piv: (beforeVerify: [[UInt8]], afterVerify: [[UInt8]])?
    let keyDerivation: KeyDerivation?
    let select: [UInt8]
    let getData: [UInt8]
    let getKDF: [UInt8]
    let decipher: [UInt8]
    /// A card that announces the KDF-DO costs tokenpin one GET DATA F9 per verify: the bare round sends it too.
    private(set) var readsKDF = false
    /// With the KDF-DO on, the card takes the PIN's digest: computed once (`followKDF`), as tokenpin's share of the
    /// work.
    private var verifyData: SecretBytes

    /// The round for `binding` on the card in `reader`, with the card PIN the benchmark was given; an OpenPGP card's
    /// traits are read first (one connection of its own).
    init(
        binding: TokenBinding, cardPIN: borrowing SecretBytes, reader: String, cards: any CardReaders,
        time: SystemTimeSource
    ) throws {
        self.reader = reader
        self.cards = cards
        self.time = time
        let piv = PIVBench.commands(for: binding)
        self.piv = piv
        let card =
            piv == nil
            ? try openPGPTraitsOfCard(in: reader, cards: cards) : (keyDerivation: nil, extendedLength: false)
        keyDerivation = card.keyDerivation
        select = CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01]).encoded()
        let getLe = card.extendedLength ? 65536 : 256
        getData = CommandAPDU(ins: 0xCA, p1: 0x00, p2: 0x6E, le: getLe).encoded(extended: card.extendedLength)
        getKDF = CommandAPDU(ins: 0xCA, p1: 0x00, p2: 0xF9, le: getLe).encoded(extended: card.extendedLength)
        decipher = Self.decipher(binding)
        verifyData = cardPIN.duplicate()
    }

    /// PSO:DECIPHER of the binding's ephemeral key. RSA: the padding indicator and the cryptogram, one extended
    /// APDU (as the session sends it); otherwise the point in its `A6` template.
    private static func decipher(_ binding: TokenBinding) -> [UInt8] {
        if binding.algorithm?.hasPrefix("rsa") ?? false {
            return CommandAPDU(
                ins: 0x2A, p1: 0x80, p2: 0x86, data: [0x00] + [UInt8](binding.ephemeralPublicKey),
                le: 65536
            ).encoded(extended: true)
        }
        let point = TLV(
            tag: 0xA6,
            children: [TLV(tag: 0x7F49, children: [TLV(tag: 0x86, value: [UInt8](binding.ephemeralPublicKey))])]
        )
        return CommandAPDU(ins: 0x2A, p1: 0x80, p2: 0x86, data: point.encoded, le: 256).encoded()
    }

    /// After the warm-up verify, which sent `apdus` APDUs: an OpenPGP verify of more than 4 read the KDF-DO, so the
    /// bare round reads it too and, where the card has one, sends the PIN's digest.
    func followKDF(apdusOfVerify apdus: Int, cardPIN: borrowing SecretBytes) throws {
        readsKDF = piv == nil && apdus > 4
        if readsKDF, let keyDerivation {
            verifyData = try keyDerivation.digest(of: cardPIN, for: .userPIN)
        }
    }

    /// How many APDUs a round sends (not counting GET RESPONSE).
    var transmits: Int { piv.map { $0.beforeVerify.count + 1 + $0.afterVerify.count } ?? (readsKDF ? 5 : 4) }

    /// One bare round: returns (total ms, transmits ms), or nil when an APDU failed.
    func run() throws -> (Double, Double)? {
        var verifyCommand =
            piv != nil
            ? PIVBench.verifyCommand(verifyData)
            : verifyData.withUnsafeBytes { [0x00, 0x20, 0x00, 0x82, UInt8($0.count)] + Array($0) }
        defer { secureZero(&verifyCommand) }
        let start = time.monotonicNanoseconds
        let connection = try cards.open(reader)
        var inner: UInt64 = 0
        var statuses: [UInt8] = []
        let transactions: [[[UInt8]]] =
            piv.map { [$0.beforeVerify, [verifyCommand] + $0.afterVerify] }
            ?? [[select, getData], readsKDF ? [getKDF, verifyCommand, decipher] : [verifyCommand, decipher]]
        for commands in transactions { try send(commands, on: connection, &inner, &statuses) }
        connection.close()
        guard statuses.allSatisfy({ $0 == 0x90 }) else { return nil }
        return (Double(time.monotonicNanoseconds - start) / 1e6, Double(inner) / 1e6)
    }

    /// One transaction: sends `commands`, adding the time spent transmitting to `inner` and each answer's SW1
    /// to `statuses`; the answers are wiped.
    private func send(
        _ commands: [[UInt8]], on connection: any CardConnection, _ inner: inout UInt64, _ statuses: inout [UInt8]
    ) throws {
        // A transaction that cannot begin throws the transport's error as it is.
        let transportError: (CardTransportError) -> any Error = { $0 }
        try connection.exclusive(transportError: transportError) { () throws in
            let transmitStart = time.monotonicNanoseconds
            for command in commands {
                var answer = try connection.transmit(command)
                // The rest of a long answer (a PIV RSA decryption), as the session fetches it.
                while answer.count >= 2, answer[answer.count - 2] == 0x61 {
                    secureZero(&answer)
                    answer = try connection.transmit([command[0] & 0xEF, 0xC0, 0x00, 0x00, answer[answer.count - 1]])
                }
                // The PIV tries query answers 63Cx: a success for the round.
                let sw1 = answer.count >= 2 ? answer[answer.count - 2] : 0
                statuses.append(sw1 == 0x63 && command.count == 4 ? 0x90 : sw1)
                secureZero(&answer)
            }
            inner += time.monotonicNanoseconds - transmitStart
        }
    }
}

/// What the bench's bare round must know of the card, as tokenpin's session reads it: the KDF-DO (`F9`, nil when
/// it is off), since the bare VERIFY must send what the card expects, and whether the card takes extended APDUs.
func openPGPTraitsOfCard(
    in reader: String, cards: any CardReaders
) throws -> (keyDerivation: KeyDerivation?, extendedLength: Bool) {
    let connection = try cards.open(reader)
    defer { connection.close() }
    let card = try OpenPGPCard.open(connection)
    let keyDerivation = try card.transaction { session throws(OpenPGPError) in try card.keyDerivation(session) }
    return (keyDerivation, connection.lengthCapabilities.extendedLength)
}
