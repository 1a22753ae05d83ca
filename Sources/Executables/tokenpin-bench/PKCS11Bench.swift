import TokenpinCLI
import TokenpinCore
import TokenpinPKCS11
import TokenpinProtocol
import TokenpinService

extension BenchRun {
    /// `tokenpin bench --token --app pkcs11`: PKCS#11 calls per token verify, as the helpers report them, and the
    /// verify's wall time against the same calls made bare: the same module loaded into this process (once, before
    /// the rounds), the same key listed by its URI and answering the same mechanism (`C_DeriveKey` or `C_Decrypt`)
    /// after `C_Login`, through the code the helper runs, with no helper process, socket or frame between. The
    /// helper's start (spawn → ready, its module loaded), which every verify pays, is timed inside the verifies.
    ///
    /// As for cards, only the key bound to the current user is benchmarked, bound again in a scratch store: no key
    /// is made on a token. Prompts: the token's PIN, once (nothing on a token with a keypad).
    func runPKCS11Token(_ context: Context) -> ExitCode {
        withTokenBenchScratch(context) { scratch in
            let counter = PKCS11CallCounter()
            var service = scratch.service(context, cards: context.cards)
            service.pkcs11.counter = counter
            let time = SystemTimeSource()
            let (interaction, binding, uri) = try scratch.bind(context, service)
            let helper = try PKCS11Helper.inProcess(module: service.pkcs11.source)
            defer { helper.stop() }
            let bare = try BarePKCS11Round(helper, uri: uri, binding: binding, interaction: interaction, time: time)
            let figures = try measure(service, interaction, bare, counter, time)
            let (record, save) = try recordUnderLock(service, user: context.user, time)
            report(
                context, figures, key: bare.listed, uri: uri, module: service.pkcs11.source, record: record,
                save: save)
            return .success
        }
    }

    /// Warms up both, then interleaves them (alternating which goes first); medians of `iterations` token verifies
    /// and as many bare rounds, the calls counted for each.
    private func measure(
        _ service: PINService, _ interaction: BenchInteraction, _ bare: BarePKCS11Round,
        _ counter: PKCS11CallCounter, _ time: SystemTimeSource
    ) throws -> PKCS11BenchFigures {
        _ = try timedTokenVerify(service, interaction, time)
        _ = try bare.run()
        var verifyTimes: [Double] = []
        var starts: [Double] = []
        var calls: [Int] = []
        var helpers: [Int] = []
        var bareTimes: [Double] = []
        var bareCalls: [(listing: Int, answer: Int)] = []
        try alternate(
            iterations,
            tokenpin: {
                let before = counter.totals
                verifyTimes.append(try timedTokenVerify(service, interaction, time))
                let after = counter.totals
                calls.append(after.calls - before.calls)
                helpers.append(after.helpers - before.helpers)
                starts.append(Double(after.startNanoseconds - before.startNanoseconds) / 1e6)
            },
            bare: {
                let round = try bare.run()
                bareTimes.append(round.milliseconds)
                bareCalls.append((round.listing, round.answer))
            })
        return PKCS11BenchFigures(
            verify: median(verifyTimes), bare: median(bareTimes), helperStart: median(starts),
            inProcessLoad: Double(bare.helper.startNanoseconds) / 1e6, callsPerVerify: calls.max() ?? 0,
            callsVary: Set(calls).count > 1, helpersPerVerify: helpers.max() ?? 0,
            loadingCalls: bare.helper.startCalls, listingCalls: bareCalls.map(\.listing).max() ?? 0,
            answerCalls: bareCalls.map(\.answer).max() ?? 0)
    }

    private func report(
        _ context: Context, _ figures: PKCS11BenchFigures, key: PKCS11Key, uri: String, module: PKCS11ModuleSource,
        record: Double, save: Double
    ) {
        let f = figures
        let operation =
            switch key.algorithm {
            case .ecdh: "C_DeriveKey"
            case .rsa: "C_Decrypt"
            }
        context.console.say("PKCS#11 token verify, \(key.displayName), module \(module) (median of \(iterations)):")
        context.console.say("  key:                \(uri)")
        context.console.say(
            "  PKCS#11 calls per verify: \(f.callsPerVerify)\(f.callsVary ? " (the most; they varied)" : "") "
                + "(the helper's start \(f.loadingCalls * f.helpersPerVerify): C_GetFunctionList, C_Initialize; "
                + "listing \(f.listingCalls); login and \(operation) \(f.answerCalls); C_Finalize as the helper ends)")
        context.console.say("  tokenpin verify:    \(fixed(f.verify, 2)) ms")
        context.console.say(
            "  bare, same calls:   \(fixed(f.bare, 2)) ms (\(f.listingCalls + f.answerCalls) calls in this process: "
                + "the listing, C_Login … \(operation); the module loaded once, in \(fixed(f.inProcessLoad, 2)) ms)")
        context.console.say("  ratio:              \(fixed(f.ratio, 2)) (tokenpin verify ÷ bare)")
        context.console.say(
            "  helper start:       \(fixed(f.helperStart, 2)) ms per verify (\(f.helpersPerVerify) tokenpin-pkcs11 "
                + "spawned → ready, its module loaded); without it the verify is \(fixed(f.withoutStart, 2)) ms, "
                + "\(fixed(f.ratioWithoutStart, 2)) x bare")
        sayRecordUnderLock(
            context, read: record, write: save,
            rest: "the frames to and from the helper, the key agreement, the re-seal, guarded memory")
        context.console.emit([
            ("ok", .bool(true)), ("application", .string("pkcs11")), ("key", .string(uri)),
            ("module", .string("\(module)")), ("iterations", .int(iterations)),
            ("pkcs11CallsPerVerify", .int(f.callsPerVerify)), ("helperStartCalls", .int(f.loadingCalls)),
            ("bareListingCalls", .int(f.listingCalls)), ("bareAnswerCalls", .int(f.answerCalls)),
            ("helpersPerVerify", .int(f.helpersPerVerify)), ("verifyMs", .double(f.verify)),
            ("bareMs", .double(f.bare)), ("ratio", .double(f.ratio)), ("helperStartMs", .double(f.helperStart)),
            ("ratioWithoutHelperStart", .double(f.ratioWithoutStart)), ("inProcessLoadMs", .double(f.inProcessLoad)),
            ("recordUnderLockMs", .double(record)), ("recordWriteMs", .double(save)),
        ])
    }
}

/// The calls of one token verify made bare, for `bench --token --app pkcs11` to time them against tokenpin's
/// verify: the bound key listed by its URI through a module loaded in this process, then the login with the key's
/// answer to a fresh challenge, checked against the secret computed from its public key.
struct BarePKCS11Round {
    let helper: PKCS11Helper
    let uri: String
    let interaction: BenchInteraction
    let time: SystemTimeSource
    /// The key as the listing found it.
    let listed: PKCS11Key
    /// The key as the token application answers with it: an RSA key with the padding the binding recorded.
    let key: PKCS11Key

    /// Lists the key once; `helper` (`PKCS11Helper.inProcess`) is the caller's to stop.
    init(
        _ helper: PKCS11Helper, uri: String, binding: TokenBinding, interaction: BenchInteraction,
        time: SystemTimeSource
    ) throws {
        self.helper = helper
        self.uri = uri
        self.interaction = interaction
        self.time = time
        listed = try helper.selectKey(uri: uri)
        var key = listed
        if case .rsa(let bits, _) = key.algorithm {
            key.algorithm = .rsa(bits: bits, padding: binding.rsaPadding == nil ? .pkcs1 : .oaep)
        }
        self.key = key
    }

    /// One bare round: the listing and the login with the key's answer, timed; their calls.
    func run() throws -> (milliseconds: Double, listing: Int, answer: Int) {
        let challenge = try PKCS11Challenge.fresh(for: key)
        let pin: SecretBytes? = interaction.cardPIN.duplicate()
        let start = time.monotonicNanoseconds
        _ = try helper.selectKey(uri: uri)
        let listing = helper.lastCalls
        let answer = try helper.answer(key, pin: pin, challenge: challenge.challenge)
        let milliseconds = Double(time.monotonicNanoseconds - start) / 1e6
        guard answer.isEqual(to: challenge.secret) else {
            throw BenchFailure("the bare answer is not the secret computed from the public key")
        }
        return (milliseconds, listing, helper.lastCalls)
    }
}

/// What the PKCS#11 benchmark measured: medians in milliseconds, calls as counted.
struct PKCS11BenchFigures {
    var verify: Double
    var bare: Double
    var helperStart: Double
    var inProcessLoad: Double
    var callsPerVerify: Int
    var callsVary: Bool
    var helpersPerVerify: Int
    var loadingCalls: Int
    var listingCalls: Int
    var answerCalls: Int

    var ratio: Double { bare > 0 ? verify / bare : 0 }
    var withoutStart: Double { verify - helperStart }
    var ratioWithoutStart: Double { bare > 0 ? withoutStart / bare : 0 }
}
