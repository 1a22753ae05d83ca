import FoundationEssentials
import TokenpinAPDU
import TokenpinCLI
import TokenpinCore
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
                // A short APDU's Lc is one byte (the bare VERIFY, BareTokenRound); OpenPGP card PINs are at most 127 bytes.
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

extension BenchRun {
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
            let bare = try BareTokenRound(
                binding: binding, cardPIN: interaction.cardPIN, reader: reader, cards: cards, time: time)
            let figures = try measure(service, interaction, bare, counter, time)
            let (record, save) = try recordUnderLock(service, user: context.user, time)
            report(context, figures, bare, record: record, save: save)
            return .success
        }
    }

    /// Warms up both, then interleaves them (alternating which goes first) so drift hits both alike; medians of
    /// `iterations` token verifies and as many bare rounds.
    private func measure(
        _ service: PINService, _ interaction: BenchInteraction, _ bare: BareTokenRound, _ counter: APDUCounter,
        _ time: SystemTimeSource
    ) throws -> TokenBenchFigures {
        let warmUp = counter.count
        _ = try service.verify(interaction, method: .token)
        try bare.followKDF(apdusOfVerify: counter.count - warmUp, cardPIN: interaction.cardPIN)
        _ = try bare.run()
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
                guard let (total, transmits) = try bare.run() else { throw BenchFailure("a bare APDU failed") }
                bareTimes.append(total)
                transmitTimes.append(transmits)
            })
        return TokenBenchFigures(
            verify: median(verifyTimes), bare: median(bareTimes), transmits: median(transmitTimes),
            apdusPerVerify: apdus.max() ?? 0)
    }

    /// Prints the figures, or emits them for `--json`.
    private func report(
        _ context: Context, _ figures: TokenBenchFigures, _ bare: BareTokenRound, record: Double, save: Double
    ) {
        let f = figures
        context.console.say("Token verify on \(bare.reader) (median of \(iterations)):")
        context.console.say("  APDUs per verify:   \(f.apdusPerVerify)")
        context.console.say("  tokenpin verify:    \(fixed(f.verify, 2)) ms")
        context.console.say(
            "  bare, same APDUs:   \(fixed(f.bare, 2)) ms (open, 2 transactions, \(bare.transmits) x "
                + "SCardTransmit, close); transmits alone \(fixed(f.transmits, 2)) ms")
        context.console.say("  ratio:              \(fixed(f.ratio, 2)) (target: within 1.25)")
        sayRecordUnderLock(
            context, read: record, write: save, rest: "the key agreement, the re-seal, guarded memory")
        context.console.emit([
            ("ok", .bool(true)), ("reader", .string(bare.reader)), ("iterations", .int(iterations)),
            ("apdusPerVerify", .int(f.apdusPerVerify)), ("verifyMs", .double(f.verify)), ("bareMs", .double(f.bare)),
            ("bareTransmitsMs", .double(f.transmits)), ("ratio", .double(f.ratio)),
            ("recordUnderLockMs", .double(record)), ("recordWriteMs", .double(save)),
        ])
    }

    /// The card the benchmark may use and whether it may give it a key: the card bound to the current user
    /// (never a new key), or the simulated card. Any other card is refused before anything is asked.
    func benchCard(_ context: Context) throws(ServiceError) -> (CardSelection, generateKey: Bool) {
        let bound = (try? context.backend.perform(Operation.Types()))?.first { $0.type == .token && $0.enabled }?.serial
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

/// What the card benchmark measured: medians in milliseconds, APDUs as counted.
struct TokenBenchFigures {
    var verify: Double
    var bare: Double
    /// The bare round's time in `SCardTransmit` alone.
    var transmits: Double
    var apdusPerVerify: Int

    var ratio: Double { bare > 0 ? verify / bare : 0 }
}
