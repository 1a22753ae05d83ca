import FoundationEssentials
import TokenpinCLI
import TokenpinCore
import TokenpinService

/// The scratch store both token benchmarks bind their card in (APDUs: `TokenBench.swift`, PKCS#11:
/// `PKCS11Bench.swift`): a private temporary directory, a fast KDF, `mode = either`; and the card they may use.
struct TokenBenchScratch {
    let directory: String
    /// The card (`BenchRun.benchCard`), and whether it may be given a key (the simulated card).
    let selection: CardSelection
    let generateKey: Bool

    /// Picks the card, refusing any the benchmark may not use before anything is asked, and makes the directory.
    init(_ context: Context, _ bench: BenchRun) throws {
        (selection, generateKey) = try bench.benchCard(context)
        guard let directory = makeTemporaryDirectory("tokenpin-bench-token") else {
            throw BenchFailure("cannot create a temporary directory", code: .ioError, errorCode: "io")
        }
        self.directory = directory
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// The service on the scratch store, with the context's settings but a fast KDF.
    func service(_ context: Context, cards: (any CardReaders)?) -> PINService {
        var configuration = context.configuration
        configuration.kdfMemoryMiB = 8
        configuration.kdfPasses = 1
        configuration.mode = .either
        var service = PINService(
            store: RecordStore(directory: directory + "/store"), configuration: configuration,
            user: context.user, cards: cards, selection: selection)
        if let module = context.pkcs11Module { service.pkcs11.module = module }
        return service
    }

    /// Enrols the scratch record and binds the card (asking its PIN once, through the person's prompts); the
    /// prompts' answers, the binding and where the card is (its reader, a PKCS#11 key's URI).
    func bind(_ context: Context, _ service: PINService) throws
        -> (BenchInteraction, TokenBinding, reader: String)
    {
        var benchPIN = Array("739154".utf8)
        let interaction = BenchInteraction(pin: SecretBytes(consuming: &benchPIN), outer: context.prompts)
        _ = try service.enrol(interaction)
        _ = try service.enableToken(interaction, generateKey: generateKey, assumeYes: generateKey)
        guard let binding = try service.store.load(user: context.user)?.slot(.token)?.token,
            let reader = try service.listReaders().first(where: { $0.serial == binding.serial })?.name
        else {
            throw ServiceError.tokenUnavailable("the bound card went away")
        }
        return (interaction, binding, reader)
    }
}

/// A benchmark that could not measure: a round that did not do what it measures (not verified), or no scratch
/// directory or a failed calibration (an I/O error).
struct BenchFailure: Error {
    let message: String
    var code = ExitCode.notVerified
    var errorCode = "bench"

    init(_ message: String, code: ExitCode = .notVerified, errorCode: String = "bench") {
        self.message = message
        self.code = code
        self.errorCode = errorCode
    }
}

extension BenchRun {
    /// Runs `body` on a fresh scratch store for the card the benchmark may use, removed after it; what stops it
    /// (the card refused, no directory, a failed round) is reported as any command reports it.
    func withTokenBenchScratch(_ context: Context, _ body: (TokenBenchScratch) throws -> ExitCode) -> ExitCode {
        let scratch: TokenBenchScratch
        do {
            scratch = try TokenBenchScratch(context, self)
        } catch {
            return benchFailed(context, error)
        }
        defer { scratch.remove() }
        do {
            return try body(scratch)
        } catch {
            return benchFailed(context, error)
        }
    }

    /// Runs each `iterations` times, interleaved and alternating which goes first (A B B A ...), so drift hits both
    /// alike. The caller warms both up first.
    func alternate(_ iterations: Int, tokenpin: () throws -> Void, bare: () throws -> Void) throws {
        for round in 0..<(2 * iterations) {
            if (round % 2 == 0) == (round / 2 % 2 == 0) { try tokenpin() } else { try bare() }
        }
    }

    /// One token verify through the service, in milliseconds; a verify that does not succeed by the token throws.
    func timedTokenVerify(_ service: PINService, _ interaction: BenchInteraction, _ time: SystemTimeSource) throws
        -> Double
    {
        let start = time.monotonicNanoseconds
        let report = try service.verify(interaction, method: .token)
        let milliseconds = Double(time.monotonicNanoseconds - start) / 1e6
        guard report.outcome == .verified(method: .token) else {
            throw BenchFailure("the token did not verify: \(report.outcome)")
        }
        return milliseconds
    }

    /// What tokenpin adds outside the card: reading the record under the user's lock, and writing it back
    /// (temporary file, fsync, rename, fsync of the directory), as every verify does; medians in milliseconds.
    func recordUnderLock(_ service: PINService, user: String, _ time: SystemTimeSource) throws
        -> (read: Double, write: Double)
    {
        var recordTimes: [Double] = []
        var saveTimes: [Double] = []
        for _ in 0..<iterations {
            // A store of its own each time: a first read of the record, decoded, as a verify's first read is.
            let store = RecordStore(directory: service.store.directory)
            let start = time.monotonicNanoseconds
            let loaded = try store.withLock(user: user) { try store.load(user: user) }
            recordTimes.append(Double(time.monotonicNanoseconds - start) / 1e6)
            guard let loaded else { throw ServiceError.tokenUnavailable("the scratch record went away") }
            let saveStart = time.monotonicNanoseconds
            try service.store.save(loaded)
            saveTimes.append(Double(time.monotonicNanoseconds - saveStart) / 1e6)
        }
        return (median(recordTimes), median(saveTimes))
    }

    /// The line both benchmarks end with: the record's part of the difference.
    func sayRecordUnderLock(_ context: Context, read: Double, write: Double, rest: String) {
        context.console.say(
            "  record under lock:  \(fixed(read, 2)) ms read, \(fixed(write, 2)) ms written (part of the difference; "
                + "the rest, not measured apart: \(rest))")
    }

    /// A benchmark that stopped: the service's error as any command reports it, a failed round as not verified.
    func benchFailed(_ context: Context, _ error: any Error) -> ExitCode {
        switch error {
        case let error as ServiceError: context.fail(error)
        case let failure as BenchFailure:
            context.console.fail(failure.code, errorCode: failure.errorCode, message: failure.message)
        default: context.fail(.tokenUnavailable("\(error)"))
        }
    }
}
