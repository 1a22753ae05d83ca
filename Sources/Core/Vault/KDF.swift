import FoundationEssentials

/// How a key slot turns its secret into the key that wraps the vault key, recorded in the slot itself so that
/// re-calibration never breaks an old slot.
public struct KDFParameters: Codable, Sendable, Equatable {
    /// The algorithm.
    public enum Algorithm: String, Codable, Sendable {
        /// Argon2id v1.3 (`crypto_pwhash`), for PINs.
        case argon2id13
        /// Keyed BLAKE2b, for high-entropy secrets (the recovery key, a card's shared secret).
        case blake2b
    }

    /// The algorithm.
    public var algorithm: Algorithm
    /// Argon2id memory in KiB (0 for BLAKE2b).
    public var memoryKiB: Int
    /// Argon2id passes (0 for BLAKE2b).
    public var passes: Int
    /// The random salt, 16 bytes.
    public var salt: Data

    /// Creates parameters with a fresh random salt.
    public init(algorithm: Algorithm, memoryKiB: Int = 0, passes: Int = 0, salt: Data? = nil) {
        self.algorithm = algorithm
        self.memoryKiB = memoryKiB
        self.passes = passes
        self.salt = salt ?? Data(SecureRandom.bytes(Self.saltLength))
    }

    /// Argon2id with the given cost and a fresh salt.
    public static func argon2id(memoryKiB: Int, passes: Int) -> KDFParameters {
        KDFParameters(algorithm: .argon2id13, memoryKiB: memoryKiB, passes: passes)
    }

    /// The largest memory a stored slot may ask for: a tampered file must not make verification exhaust RAM.
    public static let maximumMemoryKiB = 4 << 20
    /// The most passes a stored slot may ask for.
    public static let maximumPasses = 64

    /// The smallest memory a slot may ask for: libsodium's minimum, rounded up to whole KiB.
    public static var minimumMemoryKiB: Int { (Argon2id.minimumMemory + 1023) / 1024 }
    /// The salt size, 16 bytes.
    public static let saltLength = 16

    /// Whether the parameters are within the bounds tokenpin runs.
    public var isWithinBounds: Bool { problem == nil }

    /// Which parameter is out of bounds, or nil; the message names the field as a record spells it.
    ///
    /// Each number is compared with its bounds before anything multiplies it.
    public var problem: String? {
        guard salt.count == Self.saltLength else { return "kdf.salt is \(salt.count) bytes, not \(Self.saltLength)" }
        switch algorithm {
        case .argon2id13:
            guard (Self.minimumMemoryKiB...Self.maximumMemoryKiB).contains(memoryKiB) else {
                return
                    "kdf.memoryKiB is \(memoryKiB); it must be from \(Self.minimumMemoryKiB) to \(Self.maximumMemoryKiB)"
            }
            let leastPasses = Swift.max(1, Argon2id.minimumPasses)
            guard (leastPasses...Self.maximumPasses).contains(passes) else {
                return "kdf.passes is \(passes); it must be from \(leastPasses) to \(Self.maximumPasses)"
            }
        case .blake2b:
            guard memoryKiB == 0 else { return "kdf.memoryKiB is \(memoryKiB); it must be 0 for blake2b" }
            guard passes == 0 else { return "kdf.passes is \(passes); it must be 0 for blake2b" }
        }
        return nil
    }

    /// `argon2id m=64 MiB t=3` or `blake2b`.
    public var summary: String {
        switch algorithm {
        case .argon2id13: "argon2id m=\(memoryKiB / 1024) MiB t=\(passes) p=1"
        case .blake2b: "blake2b"
        }
    }

    /// Derives the 32-byte key-encryption key from `secret` (a PIN or a recovery key).
    ///
    /// Argon2id for PINs; keyed BLAKE2b over a context and the salt for high-entropy secrets.
    public func deriveKey(from secret: borrowing SecretBytes) throws(CryptoError) -> SecretBytes {
        if let problem { throw CryptoError(.kdfFailed, "KDF parameters out of bounds: \(problem)") }
        switch algorithm {
        case .argon2id13:
            return try Argon2id.deriveKey(
                password: secret, salt: [UInt8](salt), memoryBytes: memoryKiB * 1024,
                passes: passes)
        case .blake2b:
            return try BLAKE2b.keyedHash(Array("tokenpin/kek/v1".utf8) + [UInt8](salt), key: secret)
        }
    }
}

/// Picks Argon2id parameters that reach a target time on this machine, the way `cryptsetup` benchmarks.
///
/// Memory first: the cap (256 MiB, and at most a quarter of RAM) when it fits the target, otherwise less,
/// never below the floor (64 MiB); passes (at least 3) fill the rest. Every choice is then measured as a
/// verification will run it (the same memory, allocated afresh, as in a new process) and corrected from that
/// measurement until it lands within `tolerance` of the target.
public struct KDFCalibration: Sendable {
    /// The time one verification's KDF should take.
    public var targetMilliseconds: Int
    /// The most memory to use, in KiB.
    public var memoryCapKiB: Int
    /// The least memory to use, in KiB.
    public var memoryFloorKiB: Int
    /// The fewest passes.
    public var minimumPasses: Int
    /// How far from the target a measurement may land, as a fraction of it (0.1: ±10%).
    public var tolerance: Double = 0.1
    /// The most measurements after the first probe before the closest result is taken.
    public var maximumRounds = 8

    /// The result of a calibration.
    public struct Result: Sendable, Equatable {
        /// The chosen parameters (with a fresh salt).
        public var parameters: KDFParameters
        /// The measured time of one derivation with them, in milliseconds (the mean of two runs when it was repeated).
        public var measuredMilliseconds: Double
    }

    /// The defaults of issue and design: 300 ms, 256 MiB cap (quarter of RAM at most), 64 MiB floor, 3 passes.
    public init(targetMilliseconds: Int = 300, physicalMemory: UInt64 = ProcessInfo.processInfo.physicalMemory) {
        self.targetMilliseconds = targetMilliseconds
        let quarter = Int(physicalMemory / 4 / 1024)
        self.memoryFloorKiB = 64 * 1024
        self.memoryCapKiB = max(memoryFloorKiB, min(256 * 1024, quarter))
        self.minimumPasses = 3
    }

    /// Calibrates with `measure`, which runs one derivation (with memory allocated afresh) and returns its time
    /// in milliseconds.
    ///
    /// One probe at the floor gives a first cost per MiB-pass. Argon2id's time is only roughly linear in
    /// memory × passes (a larger area misses caches more and faults in more pages), so that estimate is a start:
    /// each round measures the chosen parameters, takes the cost per MiB-pass from that measurement, at that
    /// memory, and chooses again. A measurement within `tolerance` of the target is repeated and the choice
    /// kept when the mean of the two is still within it. It stops there, or when the bounds allow nothing closer
    /// (the floor on a slow machine, the cap and most passes on a fast one); after `maximumRounds` measurements
    /// it keeps the closest.
    public func calibrate(measure: (_ memoryKiB: Int, _ passes: Int) throws -> Double) rethrows -> Result {
        // Every setting is clamped into the bounds a slot may hold before it is used, and every conversion from a
        // measurement (which may be 0, negative or NaN on a broken clock) goes through `whole`, which never traps.
        let floor = min(max(memoryFloorKiB, KDFParameters.minimumMemoryKiB), KDFParameters.maximumMemoryKiB)
        let cap = min(max(memoryCapKiB, floor), KDFParameters.maximumMemoryKiB)
        let leastPasses = min(max(minimumPasses, 1), KDFParameters.maximumPasses)
        let target = Double(min(max(targetMilliseconds, 1), 3_600_000))
        let band = min(max(tolerance.isFinite ? tolerance : 0.1, 0.01), 0.5)

        func sane(_ milliseconds: Double) -> Double {
            milliseconds.isFinite && milliseconds > 0.001 ? milliseconds : 0.001
        }
        var memory = floor
        var passes = leastPasses
        var measured = sane(try measure(memory, passes))
        var confirmed = false
        var best = (memory: memory, passes: passes, measured: measured)
        for _ in 0..<min(max(maximumRounds, 1), 20) {
            if abs(measured - target) <= band * target {
                if confirmed { break }
                // In the band once: measure again and judge on the mean, so one lucky run on a busy machine is
                // not taken for the machine's speed.
                measured = (measured + sane(try measure(memory, passes))) / 2
                confirmed = true
            } else {
                // The cost of one KiB-pass as just measured, at this memory, and the KiB × passes that fit the target.
                let budget = target / (measured / (Double(memory) * Double(passes)))
                let next = Self.choose(budget: budget, floor: floor, cap: cap, leastPasses: leastPasses, band: band)
                if next.memory == memory && next.passes == passes { break }  // the bounds allow nothing closer
                memory = next.memory
                passes = next.passes
                measured = sane(try measure(memory, passes))
                confirmed = false
            }
            let same = best.memory == memory && best.passes == passes
            if same || abs(measured - target) < abs(best.measured - target) { best = (memory, passes, measured) }
        }
        return Result(
            parameters: .argon2id(memoryKiB: best.memory, passes: best.passes),
            measuredMilliseconds: best.measured)
    }

    /// The parameters whose cost comes closest to `budget` KiB × passes, memory first.
    ///
    /// Below the cap at the fewest passes, memory shrinks (whole MiB, not below the floor). Otherwise memory stays
    /// at the cap with the nearest whole number of passes when that lands within three quarters of `band`; when
    /// it does not (a pass is a large step at few passes), the fewest passes that fit under the cap are taken and
    /// memory is lowered to fill the budget.
    static func choose(budget: Double, floor: Int, cap: Int, leastPasses: Int, band: Double) -> (
        memory: Int, passes: Int
    ) {
        let mebibyte = 1024
        let atLeastPasses = whole(budget / Double(leastPasses), in: floor...cap)
        guard atLeastPasses >= cap else { return (max(floor, atLeastPasses / mebibyte * mebibyte), leastPasses) }
        // The nearest whole number of passes at the cap; on a tie the fewer, so as not to overshoot.
        let below = whole((budget / Double(cap)).rounded(.down), in: leastPasses...KDFParameters.maximumPasses)
        let above = whole((budget / Double(cap)).rounded(.up), in: leastPasses...KDFParameters.maximumPasses)
        let nearest =
            abs(Double(cap) * Double(above) - budget) < abs(Double(cap) * Double(below) - budget) ? above : below
        if abs(Double(cap) * Double(nearest) - budget) <= 0.75 * band * budget || nearest == KDFParameters.maximumPasses
        {
            return (cap, nearest)
        }
        let passes = above
        let memory = whole(budget / Double(passes), in: floor...cap)
        return (max(floor, memory / mebibyte * mebibyte), passes)
    }

    /// `value` rounded down into `range`; NaN gives the lower bound.
    static func whole(_ value: Double, in range: ClosedRange<Int>) -> Int {
        guard value >= Double(range.lowerBound) else { return range.lowerBound }
        guard value < Double(range.upperBound) else { return range.upperBound }
        return Int(value)
    }

    /// Calibrates by running Argon2id on this machine.
    public func calibrate(timeSource: any TimeSource = SystemTimeSource()) throws -> Result {
        let password = SecretBytes(count: 8)
        let salt = SecureRandom.bytes(Argon2id.saltLength)
        return try calibrate { memoryKiB, passes in
            let start = timeSource.monotonicNanoseconds
            let parameters = KDFParameters(
                algorithm: .argon2id13, memoryKiB: memoryKiB, passes: passes, salt: Data(salt))
            _ = try parameters.deriveKey(from: password)
            return Double(timeSource.monotonicNanoseconds &- start) / 1e6
        }
    }
}
