import FoundationEssentials
import TokenpinArguments
import TokenpinCLI
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// Makes a private temporary directory (0700) for the demo and the benchmark.
func makeTemporaryDirectory(_ prefix: String) -> String? {
    let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
    return try? TemporaryDirectory.make(prefix: prefix, in: base)
}

/// `tokenpin bench` (declared in TokenpinCLI's Commands/Bench.swift): the Argon2id calibration, then verify latency
/// split into KDF time and everything else.
struct BenchRun: Command {
    var iterations: Int
    var token = false

    init(iterations: Int, token: Bool = false) {
        self.iterations = iterations
        self.token = token
    }

    /// `bench [--iterations N] [--token [--app ...] [--token-uri URI] [--pkcs11-module PATH]]`.
    init(parsing parsed: ParsedCommandLine) throws(UsageError) {
        let values = parsed.values
        var iterations = 5
        if let value = values.value(Options.iterations) {
            guard let number = Int(value), (1...1000).contains(number) else {
                throw UsageError(message: "--iterations must be a number from 1 to 1000", command: "bench")
            }
            iterations = number
        }
        for option in [Options.app, Options.tokenURI, Options.pkcs11Module]
        where values.isSet(option) && !values.isSet(Options.token) {
            throw UsageError(message: "\(option.names[0]) applies to `bench --token`", command: "bench")
        }
        self.init(iterations: iterations, token: values.isSet(Options.token))
    }

    func run(_ context: Context) -> ExitCode {
        if token { return runToken(context) }
        let time = SystemTimeSource()
        do {
            let calibration = try calibrate(context, time)
            let latency = try verifyLatency(context, calibration.parameters, time)
            report(context, calibration, latency)
            return .success
        } catch {
            return benchFailed(context, error)
        }
    }

    /// Calibrates Argon2id for the configured target and prints what it chose.
    private func calibrate(_ context: Context, _ time: SystemTimeSource) throws(BenchFailure) -> KDFCalibration.Result {
        let calibration = KDFCalibration(targetMilliseconds: context.configuration.kdfTargetMilliseconds)
        let calibrationStart = time.monotonicNanoseconds
        let result: KDFCalibration.Result
        do {
            result = try calibration.calibrate(timeSource: time)
        } catch {
            throw BenchFailure("calibration failed: \(error)", code: .ioError, errorCode: "crypto")
        }
        let calibrationSeconds = Double(time.monotonicNanoseconds - calibrationStart) / 1e9
        let chosen = result.parameters
        context.console.say(
            "Argon2id calibration (target \(context.configuration.kdfTargetMilliseconds) ms, "
                + "memory \(calibration.memoryFloorKiB / 1024)-\(calibration.memoryCapKiB / 1024) MiB):")
        context.console.say("  chosen:   m=\(chosen.memoryKiB / 1024) MiB, t=\(chosen.passes), p=1")
        context.console.say(
            "  measured: \(fixed(result.measuredMilliseconds, 1)) ms per derivation (calibration took "
                + "\(fixed(calibrationSeconds, 2)) s)")
        return result
    }

    /// Enrols in a temporary store with `chosen` (and no delay after a failure) and times `iterations` PIN
    /// verifies: medians of the wall time and of the KDF's, in milliseconds. The store is removed after.
    private func verifyLatency(_ context: Context, _ chosen: KDFParameters, _ time: SystemTimeSource) throws
        -> (wall: Double, kdf: Double)
    {
        guard let directory = makeTemporaryDirectory("tokenpin-bench") else {
            throw BenchFailure("cannot create a temporary directory", code: .ioError, errorCode: "io")
        }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = context.configuration
        configuration.kdfMemoryMiB = chosen.memoryKiB / 1024
        configuration.kdfPasses = chosen.passes
        configuration.failDelay = []
        let service = PINService(
            store: RecordStore(directory: directory + "/store"), configuration: configuration,
            user: context.user)
        let pin = "739154"
        _ = try service.enrol(ScriptedInteraction([pin, pin]))
        var walls: [Double] = []
        var kdfs: [Double] = []
        for _ in 0..<iterations {
            let start = time.monotonicNanoseconds
            let report = try service.verifyPIN(ScriptedInteraction([pin]))
            guard report.outcome == .verified(method: .pin) else {
                throw BenchFailure("the benchmark PIN did not verify")
            }
            walls.append(Double(time.monotonicNanoseconds - start) / 1e6)
            kdfs.append(Double(report.kdfNanoseconds) / 1e6)
        }
        return (median(walls), median(kdfs))
    }

    /// Prints the verify latency and the peak memory, or emits them with the calibration for `--json`.
    private func report(
        _ context: Context, _ calibration: KDFCalibration.Result, _ latency: (wall: Double, kdf: Double)
    ) {
        let (wall, kdf) = latency
        let other = wall - kdf
        let chosen = calibration.parameters
        let peakMiB = Double((try? ResourceUsage.ofCurrentProcess())?.peakResidentKiB ?? 0) / 1024
        context.console.say("Verify latency (median of \(iterations)):")
        context.console.say("  wall:     \(fixed(wall, 1)) ms")
        context.console.say("  KDF:      \(fixed(kdf, 1)) ms")
        context.console.say(
            "  other:    \(fixed(other, 2)) ms (\(fixed(kdf > 0 ? other / kdf * 100 : 0, 2))% of the KDF: counter "
                + "write, fsyncs, unwrap, record I/O)")
        context.console.say("Peak memory (max RSS): \(fixed(peakMiB, 1)) MiB")
        context.console.emit([
            ("ok", .bool(true)),
            (
                "calibration",
                .object([
                    ("targetMs", .int(context.configuration.kdfTargetMilliseconds)),
                    ("memoryMiB", .int(chosen.memoryKiB / 1024)), ("passes", .int(chosen.passes)),
                    ("lanes", .int(1)), ("measuredMs", .double(calibration.measuredMilliseconds)),
                ])
            ),
            (
                "verify",
                .object([
                    ("iterations", .int(iterations)), ("wallMs", .double(wall)), ("kdfMs", .double(kdf)),
                    ("otherMs", .double(other)), ("otherPercentOfKdf", .double(kdf > 0 ? other / kdf * 100 : 0)),
                ])
            ),
            ("peakRSSMiB", .double(peakMiB)),
        ])
    }

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
