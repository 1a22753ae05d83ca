import Foundation
import Testing
import TokenpinCardCrypto
import TokenpinCore
import TokenpinSystem
import TokenpinTestSupport

@testable import TokenpinPKCS11

/// The figures of the note: PKCS#11 calls per derive or decrypt, the time of the same calls made bare (the module
/// loaded in this process) and through the helper, and the helper's start cost (spawn → ready). The calls and the
/// answers are checked on every run; the times are measured for `make bench-pkcs11` only, which sets
/// `TOKENPIN_PKCS11_BENCH_ITERATIONS` (200), and printed, never asserted.
enum Figures {
    /// The benchmark's count; nil in an ordinary test run, which prints no time.
    static let benchIterations =
        ProcessInfo.processInfo.environment["TOKENPIN_PKCS11_BENCH_ITERATIONS"].flatMap(Int.init)
    static let iterations = benchIterations ?? 3

    /// The median of `samples` nanoseconds, in milliseconds.
    static func median(_ samples: [UInt64]) -> Double {
        let sorted = samples.sorted()
        return sorted.isEmpty ? 0 : Double(sorted[sorted.count / 2]) / 1e6
    }

    static func timed(_ body: () throws -> Void) rethrows -> UInt64 {
        let start = MonotonicClock.nanoseconds
        try body()
        return MonotonicClock.nanoseconds - start
    }

    /// Measures `key`'s answer bare (through `tokens`, in this process) and through a helper started by `start`, and
    /// prints one line; checks that both answer the secret computed from the public key.
    static func report(
        _ name: String, key: PKCS11Key, pin: String, tokens: PKCS11Tokens, start: () throws -> PKCS11Helper
    ) throws {
        let reference = PKCS11KeyReference(key)
        var bare: [UInt64] = []
        var bareCalls = 0
        for _ in 0..<iterations {
            let challenge = try PKCS11Challenge.fresh(for: key)
            let pinSecret: SecretBytes? = .some(secret(pin))
            let before = tokens.calls
            var same = false
            bare.append(
                try timed {
                    let answer: SecretBytes
                    switch key.algorithm {
                    case .ecdh(let curve):
                        answer = try tokens.derive(
                            reference, curve: curve, pin: pinSecret, peerPoint: challenge.challenge)
                    case .rsa(_, let padding):
                        answer = try tokens.decrypt(
                            reference, padding: padding, pin: pinSecret, cryptogram: challenge.challenge,
                            expectedLength: PKCS11Challenge.rsaSecretLength)
                    }
                    same = answer.isEqual(to: challenge.secret)
                })
            bareCalls = tokens.calls - before
            #expect(same)
        }
        var starts: [UInt64] = []
        var through: [UInt64] = []
        var helperCalls = 0
        for round in 0..<5 {
            let helper = try start()
            defer { helper.stop() }
            starts.append(helper.startNanoseconds)
            guard round == 0 else { continue }
            for _ in 0..<iterations {
                let challenge = try PKCS11Challenge.fresh(for: key)
                var same = false
                through.append(
                    try timed {
                        let answer = try helper.answer(key, pin: secret(pin), challenge: challenge.challenge)
                        same = answer.isEqual(to: challenge.secret)
                    })
                helperCalls = helper.lastCalls
                #expect(same)
            }
        }
        #expect(bareCalls == helperCalls)
        guard benchIterations != nil else { return }
        let operation = key.algorithm.description.hasPrefix("rsa") ? "decrypt" : "derive"
        print(
            "figure: \(name) \(key.algorithm): \(bareCalls) PKCS#11 calls per login+\(operation); bare "
                + String(format: "%.2f", median(bare)) + " ms, through tokenpin-pkcs11 "
                + String(format: "%.2f", median(through)) + " ms (median of \(iterations)); helper start "
                + String(format: "%.1f", median(starts)) + " ms (spawn → ready, median of 5)")
    }
}

/// The in-process (bare) measurements load SoftHSM into this process, whose configuration it reads from the
/// environment: one at a time.
@Suite("Figures: PKCS#11 calls and times, bare and through the helper", .serialized, .enabled(if: Tools.hasSoftHSM))
struct FiguresTests {
    @Test(
        "SoftHSM: calls per verify, bare against through the helper, and the helper's start",
        arguments: [
            "EC:prime256v1", "rsa:2048",
        ])
    func softHSM(type: String) throws {
        let hsm = try SoftHSM()
        try hsm.initToken(label: "bench")
        try hsm.generateKey(token: "bench", type: type, id: "01", label: "k")
        setenv("SOFTHSM2_CONF", hsm.configuration, 1)
        let tokens = try PKCS11Tokens.load(.path(hsm.module))
        defer { tokens.finalize() }
        let inventory = try tokens.list(uri: nil)
        let key = try PKCS11Helper.select(from: inventory, uri: nil, source: .path(hsm.module))
        try Figures.report("SoftHSM", key: key, pin: "123456", tokens: tokens) { try hsm.helper() }
    }
}
