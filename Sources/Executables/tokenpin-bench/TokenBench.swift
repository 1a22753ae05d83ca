import FoundationEssentials
import TokenpinAPDU
import TokenpinCLI
import TokenpinCore
import TokenpinOpenPGP
import TokenpinProtocol
import TokenpinReaders
import TokenpinService

/// Readers whose connections count their APDUs.
struct CountingReaders: CardReaders {
    let inner: any CardReaders
    let counter: APDUCounter

    func list() throws(ServiceError) -> [ReaderPresence] { try inner.list() }

    func open(_ reader: String) throws(ServiceError) -> any CardConnection {
        CountingConnection(try inner.open(reader), counter: counter)
    }

    func withTimeouts(_ timeouts: CardTimeouts) -> any CardReaders {
        CountingReaders(inner: inner.withTimeouts(timeouts), counter: counter)
    }
}

/// Answers the benchmark's prompts: its own PIN for the scratch record, and the card's PINs asked once from the
/// person (through `outer`, so the prompts show the tries left that the card reports) and kept for the rounds.
final class BenchInteraction: Interaction {
    let pin: SecretBytes
    let outer: any Interaction
    private(set) var cardPIN = SecretBytes(count: 0)
    private var hasCardPIN = false
    private var adminPIN = SecretBytes(count: 0)
    private var hasAdminPIN = false

    init(pin: consuming SecretBytes, outer: any Interaction) {
        self.pin = pin
        self.outer = outer
    }

    func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        switch prompt {
        case .pin, .newPIN, .confirmPIN, .currentPIN: return pin.duplicate()
        case .cardPIN:
            if !hasCardPIN {
                let typed = try outer.readSecret(prompt)
                // A short APDU's Lc is one byte (the bare VERIFY below); OpenPGP card PINs are at most 127 bytes.
                guard typed.count <= 127 else { throw .usage("a card PIN is at most 127 bytes") }
                cardPIN = typed
                hasCardPIN = true
            }
            return cardPIN.duplicate()
        case .adminPIN:
            if !hasAdminPIN {
                adminPIN = try outer.readSecret(prompt)
                hasAdminPIN = true
            }
            return adminPIN.duplicate()
        default: throw .input("the benchmark does not answer the \(prompt.spokenName) prompt")
        }
    }

    func report(_ event: Event) {}
    /// Only the simulated card is ever given a key by the benchmark (`runToken` refuses real cards not bound).
    func confirm(_ question: String) throws(ServiceError) -> Bool { true }
    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int {
        throw .usage("several cards: choose one for the benchmark with --reader or --serial")
    }
    var newPINAttempts: Int { 1 }
}

extension BenchCommand {
    /// `tokenpin bench --token`: APDUs per token verify, and its wall time against the same APDUs sent bare
    /// through the same readers (open; SELECT, GET DATA in one transaction; [GET DATA F9,] VERIFY, PSO:DECIPHER in a
    /// second, as the card PIN is asked between them; close). What tokenpin adds outside the card, the record read
    /// under the user's lock and the record written (atomically, synced), is timed apart.
    ///
    /// Binds a card into a temporary store. Only the card already bound to the current user (whose decryption key
    /// is used as it is) or the simulated card (given a key when it has none) is benchmarked: any other card
    /// is refused, naming what binding it would cost. Prompts: card PIN (admin PIN only for the simulated card
    /// without a key), with the tries left the card reports.
    func runToken(_ context: Context) -> ExitCode {
        if context.selection.application == .pkcs11 { return runPKCS11Token(context) }
        guard let cards = context.cards else {
            return context.fail(.tokenUnavailable("no card readers configured"))
        }
        return withTokenBenchScratch(context) { scratch in
            let counter = APDUCounter()
            let service = scratch.service(context, cards: CountingReaders(inner: cards, counter: counter))
            let time = SystemTimeSource()
            let (interaction, binding, reader) = try scratch.bind(context, service)
            // The same APDUs, bare, through the same readers: open, one transaction, close with a reset. Encoded as
            // the session sends them: GET DATA with an extended Le, or a short one (00) to a card that announces no
            // extended length (Gnuk).
            // A PIV binding: its own APDUs (PIVBench.swift), and no OpenPGP traits to read.
            let piv = PIVBench.commands(for: binding)
            let card =
                piv == nil
                ? try openPGPTraitsOfCard(in: reader, cards: cards) : (keyDerivation: nil, extendedLength: false)
            let select = CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01])
                .encoded()
            let getLe = card.extendedLength ? 65536 : 256
            let getData = CommandAPDU(ins: 0xCA, p1: 0x00, p2: 0x6E, le: getLe).encoded(extended: card.extendedLength)
            let getKDF = CommandAPDU(ins: 0xCA, p1: 0x00, p2: 0xF9, le: getLe).encoded(extended: card.extendedLength)
            let decipher: [UInt8]
            if binding.algorithm?.hasPrefix("rsa") ?? false {
                // RSA: the padding indicator and the cryptogram, one extended APDU (as the session sends it).
                decipher = CommandAPDU(
                    ins: 0x2A, p1: 0x80, p2: 0x86, data: [0x00] + [UInt8](binding.ephemeralPublicKey),
                    le: 65536
                ).encoded(extended: true)
            } else {
                let point = TLV(
                    tag: 0xA6,
                    children: [TLV(tag: 0x7F49, children: [TLV(tag: 0x86, value: [UInt8](binding.ephemeralPublicKey))])]
                )
                decipher = CommandAPDU(ins: 0x2A, p1: 0x80, p2: 0x86, data: point.encoded, le: 256).encoded()
            }
            // A card that announces the KDF-DO costs tokenpin one GET DATA F9 per verify: the bare round sends it too.
            var readsKDF = false
            // With the KDF-DO on, the card takes the PIN's digest: computed once here, as tokenpin's share of the work.
            var verifyData = interaction.cardPIN.duplicate()
            /// One bare round: returns (total ms, transmits ms), or nil when an APDU failed.
            ///
            /// Two transactions, as tokenpin's verify has: the card PIN is asked between reading the tries left
            /// (OpenPGP: SELECT, GET DATA; PIV: SELECT, the CHUID, the tries query) and VERIFY, and no transaction
            /// is held while a person types.
            func bareRound() throws -> (Double, Double)? {
                var verifyCommand =
                    piv != nil
                    ? PIVBench.verifyCommand(verifyData)
                    : verifyData.withUnsafeBytes { [0x00, 0x20, 0x00, 0x82, UInt8($0.count)] + Array($0) }
                defer { secureZero(&verifyCommand) }
                let start = time.monotonicNanoseconds
                let connection = try cards.open(reader)
                var inner: UInt64 = 0
                var statuses: [UInt8] = []
                func send(_ commands: [[UInt8]]) throws {
                    try connection.exclusive(transportError: { $0 }) { () throws in
                        let transmitStart = time.monotonicNanoseconds
                        for command in commands {
                            var answer = try connection.transmit(command)
                            // The rest of a long answer (a PIV RSA decryption), as the session fetches it.
                            while answer.count >= 2, answer[answer.count - 2] == 0x61 {
                                secureZero(&answer)
                                answer = try connection.transmit([
                                    command[0] & 0xEF, 0xC0, 0x00, 0x00, answer[answer.count - 1],
                                ])
                            }
                            // The PIV tries query answers 63Cx: a success for the round.
                            let sw1 = answer.count >= 2 ? answer[answer.count - 2] : 0
                            statuses.append(sw1 == 0x63 && command.count == 4 ? 0x90 : sw1)
                            secureZero(&answer)
                        }
                        inner += time.monotonicNanoseconds - transmitStart
                    }
                }
                let transactions: [[[UInt8]]] =
                    piv.map { [$0.beforeVerify, [verifyCommand] + $0.afterVerify] }
                    ?? [[select, getData], readsKDF ? [getKDF, verifyCommand, decipher] : [verifyCommand, decipher]]
                for commands in transactions { try send(commands) }
                connection.close()
                guard statuses.allSatisfy({ $0 == 0x90 }) else { return nil }
                return (Double(time.monotonicNanoseconds - start) / 1e6, Double(inner) / 1e6)
            }
            // Warm up both, then interleave them (alternating which goes first) so drift hits both alike.
            let warmUp = counter.count
            _ = try service.verify(interaction, method: .token)
            readsKDF = piv == nil && counter.count - warmUp > 4
            if readsKDF, let derivation = card.keyDerivation {
                verifyData = try derivation.digest(of: interaction.cardPIN, for: .userPIN)
            }
            _ = try bareRound()
            var verifyTimes: [Double] = []
            var apdus: [Int] = []
            var bareTimes: [Double] = []
            var transmitTimes: [Double] = []
            try alternate(
                iterations,
                tokenpin: {
                    let before = counter.count
                    verifyTimes.append(try timedTokenVerify(service, interaction, time))
                    apdus.append(counter.count - before)
                },
                bare: {
                    guard let (total, transmits) = try bareRound() else { throw BenchFailure("a bare APDU failed") }
                    bareTimes.append(total)
                    transmitTimes.append(transmits)
                })
            let (record, save) = try recordUnderLock(service, user: context.user, time)
            let verify = median(verifyTimes)
            let bare = median(bareTimes)
            let transmits = median(transmitTimes)
            let ratio = bare > 0 ? verify / bare : 0
            context.console.say("Token verify on \(reader) (median of \(iterations)):")
            context.console.say("  APDUs per verify:   \(apdus.max() ?? 0)")
            context.console.say("  tokenpin verify:    \(fixed(verify, 2)) ms")
            context.console.say(
                "  bare, same APDUs:   \(fixed(bare, 2)) ms (open, 2 transactions, "
                    + "\(piv.map { $0.beforeVerify.count + 1 + $0.afterVerify.count } ?? (readsKDF ? 5 : 4)) x "
                    + "SCardTransmit, close); transmits alone \(fixed(transmits, 2)) ms")
            context.console.say("  ratio:              \(fixed(ratio, 2)) (target: within 1.20)")
            sayRecordUnderLock(
                context, read: record, write: save, rest: "the key agreement, the re-seal, guarded memory")
            context.console.emit([
                ("ok", .bool(true)), ("reader", .string(reader)), ("iterations", .int(iterations)),
                ("apdusPerVerify", .int(apdus.max() ?? 0)), ("verifyMs", .double(verify)), ("bareMs", .double(bare)),
                ("bareTransmitsMs", .double(transmits)), ("ratio", .double(ratio)),
                ("recordUnderLockMs", .double(record)), ("recordWriteMs", .double(save)),
            ])
            return .success
        }
    }

    /// The card the benchmark may use and whether it may give it a key: the card bound to the current user
    /// (never a new key), or the simulated card. Any other card is refused before anything is asked.
    func benchCard(_ context: Context) throws(ServiceError) -> (CardSelection, generateKey: Bool) {
        let bound = (try? context.backend.types())?.first { $0.type == .token && $0.enabled }?.serial
        var service = context.service
        // A card bound through PIV is looked at through PIV (a YubiKey carries OpenPGP too).
        if let bound, bound.hasPrefix("piv-"), service.selection.application == nil {
            service.selection.application = .piv
        }
        let readers = try service.listReaders().filter { $0.serial != nil }
        if let bound {
            guard readers.contains(where: { $0.serial == bound }) else {
                throw .tokenUnavailable(
                    "card \(cardLabel(serial: bound)), bound to \(context.user), is not in any reader")
            }
            var selection = service.selection
            selection.serial = bound
            return (selection, false)
        }
        if context.simulatedCard { return (context.selection, true) }
        let cards = readers.filter { context.selection.serial == nil || $0.serial == context.selection.serial }
        let pkcs11 = context.selection.application == .pkcs11
        guard !cards.isEmpty else {
            throw .tokenUnavailable(pkcs11 ? "no usable PKCS#11 key is present" : "no OpenPGP card is present")
        }
        let described = cards.map { reader in
            let label = "card \(cardLabel(serial: reader.serial ?? ""))"
            return reader.usable
                ? "\(label) (its decryption key would be bound in a scratch store and its card PIN tries spent)"
                : "\(label) (its decryption key would be replaced: \(reader.unusableReason ?? "not a cv25519 key"); "
                    + "what was encrypted to it could no longer be decrypted with the card)"
        }
        throw .usage(
            "bench --token runs only on the card bound to \(context.user)"
                + (pkcs11 ? "" : " or on the simulated card (--reader sim)") + "; refused for "
                + described.joined(separator: "; "))
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
