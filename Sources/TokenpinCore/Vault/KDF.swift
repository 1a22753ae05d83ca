import Foundation

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
        self.salt = salt ?? Data(SecureRandom.bytes(16))
    }

    /// Argon2id with the given cost and a fresh salt.
    public static func argon2id(memoryKiB: Int, passes: Int) -> KDFParameters {
        KDFParameters(algorithm: .argon2id13, memoryKiB: memoryKiB, passes: passes)
    }

    /// The largest memory a stored slot may ask for: a tampered file must not make verification exhaust RAM.
    public static let maximumMemoryKiB = 4 << 20
    /// The most passes a stored slot may ask for.
    public static let maximumPasses = 64

    /// Whether the parameters are within the bounds tokenpin runs.
    public var isWithinBounds: Bool {
        guard salt.count == 16 else { return false }
        switch algorithm {
        case .argon2id13:
            return memoryKiB * 1024 >= Argon2id.minimumMemory && memoryKiB <= Self.maximumMemoryKiB
                && passes >= Argon2id.minimumPasses && passes <= Self.maximumPasses
        case .blake2b:
            return memoryKiB == 0 && passes == 0
        }
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
        switch algorithm {
        case .argon2id13:
            return try Argon2id.deriveKey(password: secret, salt: [UInt8](salt), memoryBytes: memoryKiB * 1024,
                                          passes: passes)
        case .blake2b:
            return try BLAKE2b.keyedHash(Array("tokenpin/kek/v1".utf8) + [UInt8](salt), key: secret)
        }
    }
}

/// Picks Argon2id parameters that reach a target time on this machine, the way `cryptsetup` benchmarks.
///
/// Memory first: the cap (256 MiB, and at most a quarter of RAM) when it fits the target, otherwise less,
/// never below the floor (64 MiB); then passes (at least 3) to fill the remaining time.
public struct KDFCalibration: Sendable {
    /// The time one verification's KDF should take.
    public var targetMilliseconds: Int
    /// The most memory to use, in KiB.
    public var memoryCapKiB: Int
    /// The least memory to use, in KiB.
    public var memoryFloorKiB: Int
    /// The fewest passes.
    public var minimumPasses: Int

    /// The result of a calibration.
    public struct Result: Sendable, Equatable {
        /// The chosen parameters (with a fresh salt).
        public var parameters: KDFParameters
        /// The measured time of one derivation with them, in milliseconds.
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

    /// Calibrates with `measure`, which runs one derivation and returns its time in milliseconds.
    ///
    /// Argon2id's time grows linearly with memory × passes, so one probe at the floor gives the cost per
    /// MiB-pass; the choice is then checked with one run at the chosen parameters and adjusted once.
    public func calibrate(measure: (_ memoryKiB: Int, _ passes: Int) throws -> Double) rethrows -> Result {
        let probe = try measure(memoryFloorKiB, minimumPasses)
        let perUnit = max(probe, 0.001) / Double(memoryFloorKiB * minimumPasses)
        let budget = Double(targetMilliseconds) / perUnit  // KiB × passes that fit the target
        var memory = Int(budget / Double(minimumPasses))
        memory = min(memoryCapKiB, max(memoryFloorKiB, memory)) / 1024 * 1024
        var passes = max(minimumPasses, Int(budget / Double(memory)))
        var measured = try measure(memory, passes)
        if measured > Double(targetMilliseconds) * 1.25, passes > minimumPasses {
            passes = max(minimumPasses, Int(Double(passes) * Double(targetMilliseconds) / measured))
            measured = try measure(memory, passes)
        }
        return Result(parameters: .argon2id(memoryKiB: memory, passes: passes), measuredMilliseconds: measured)
    }

    /// Calibrates by running Argon2id on this machine.
    public func calibrate(timeSource: any TimeSource = SystemTimeSource()) throws -> Result {
        let password = SecretBytes(count: 8)
        let salt = SecureRandom.bytes(Argon2id.saltLength)
        return try calibrate { memoryKiB, passes in
            let start = timeSource.monotonicNanoseconds
            _ = try Argon2id.deriveKey(password: password, salt: salt, memoryBytes: memoryKiB * 1024, passes: passes)
            return Double(timeSource.monotonicNanoseconds - start) / 1e6
        }
    }
}
