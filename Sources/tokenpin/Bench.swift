import Foundation
import TokenpinCore
import TokenpinService
#if canImport(Glibc)
import Glibc
#endif

/// Makes a private temporary directory (0700) for the demo and the benchmark.
func makeTemporaryDirectory(_ prefix: String) -> String? {
    var template = Array((NSTemporaryDirectory() + "/\(prefix).XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { return nil }
    return String(cString: made)
}

/// `tokenpin bench`: the Argon2id calibration, then verify latency split into KDF time and everything else.
struct BenchCommand: Command {
    var iterations: Int
    var token = false

    func run(_ context: Context) -> ExitCode {
        if token { return runToken(context) }
        let time = SystemTimeSource()
        let calibration = KDFCalibration(targetMilliseconds: context.configuration.kdfTargetMilliseconds)
        let calibrationStart = time.monotonicNanoseconds
        let result: KDFCalibration.Result
        do {
            result = try calibration.calibrate(timeSource: time)
        } catch {
            return context.console.fail(.ioError, errorCode: "crypto", message: "calibration failed: \(error)")
        }
        let calibrationSeconds = Double(time.monotonicNanoseconds - calibrationStart) / 1e9
        let chosen = result.parameters
        context.console.say("Argon2id calibration (target \(context.configuration.kdfTargetMilliseconds) ms, "
            + "memory \(calibration.memoryFloorKiB / 1024)-\(calibration.memoryCapKiB / 1024) MiB):")
        context.console.say("  chosen:   m=\(chosen.memoryKiB / 1024) MiB, t=\(chosen.passes), p=1")
        context.console.say(String(format: "  measured: %.1f ms per derivation (calibration took %.2f s)",
                                   result.measuredMilliseconds, calibrationSeconds))

        guard let directory = makeTemporaryDirectory("tokenpin-bench") else {
            return context.console.fail(.ioError, errorCode: "io", message: "cannot create a temporary directory")
        }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = context.configuration
        configuration.kdfMemoryMiB = chosen.memoryKiB / 1024
        configuration.kdfPasses = chosen.passes
        configuration.failDelay = []
        let service = PINService(store: RecordStore(directory: directory + "/store"), configuration: configuration,
                                 user: context.user)
        let pin = "739154"
        do {
            _ = try service.enrol(ScriptedInteraction([pin, pin]))
        } catch {
            return context.fail(error)
        }
        var walls: [Double] = []
        var kdfs: [Double] = []
        for _ in 0..<iterations {
            let start = time.monotonicNanoseconds
            let report: VerifyReport
            do {
                report = try service.verifyPIN(ScriptedInteraction([pin]))
            } catch {
                return context.fail(error)
            }
            guard report.outcome == .verified(method: .pin) else {
                return context.console.fail(.notVerified, errorCode: "bench", message: "the benchmark PIN did not verify")
            }
            walls.append(Double(time.monotonicNanoseconds - start) / 1e6)
            kdfs.append(Double(report.kdfNanoseconds) / 1e6)
        }
        let wall = median(walls)
        let kdf = median(kdfs)
        let other = wall - kdf
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let peakMiB = Double(usage.ru_maxrss) / 1024
        context.console.say("Verify latency (median of \(iterations)):")
        context.console.say(String(format: "  wall:     %.1f ms", wall))
        context.console.say(String(format: "  KDF:      %.1f ms", kdf))
        context.console.say(String(format: "  other:    %.2f ms (%.2f%% of the KDF: counter write, fsyncs, unwrap, record I/O)",
                                   other, kdf > 0 ? other / kdf * 100 : 0))
        context.console.say(String(format: "Peak memory (max RSS): %.1f MiB", peakMiB))
        context.console.emit([
            ("ok", .bool(true)),
            ("calibration", .object([("targetMs", .int(context.configuration.kdfTargetMilliseconds)),
                                     ("memoryMiB", .int(chosen.memoryKiB / 1024)), ("passes", .int(chosen.passes)),
                                     ("lanes", .int(1)), ("measuredMs", .double(result.measuredMilliseconds))])),
            ("verify", .object([("iterations", .int(iterations)), ("wallMs", .double(wall)), ("kdfMs", .double(kdf)),
                                ("otherMs", .double(other)), ("otherPercentOfKdf", .double(kdf > 0 ? other / kdf * 100 : 0))])),
            ("peakRSSMiB", .double(peakMiB)),
        ])
        return .success
    }

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
