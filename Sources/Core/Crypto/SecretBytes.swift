internal import CSodium

/// Secret bytes (a PIN, a key, a shared secret) in libsodium guarded memory.
///
/// The bytes live in `sodium_malloc` memory: page-guarded, locked out of swap (`mlock`) and excluded
/// from core dumps where the kernel allows (`MADV_DONTDUMP`). They are wiped when the value is released; the
/// wiped region, still guarded, may then hold the next secret of the same length (`GuardedRegions`).
/// The type is non-copyable, so a secret has one owner, cannot be captured by accident and cannot be
/// interpolated into a string; it is not `Codable` and its `description` is a redaction. The bytes are
/// reached only through borrowing closures; comparisons take constant time.
public struct SecretBytes: ~Copyable, @unchecked Sendable {
    // @unchecked Sendable: the pointer is owned uniquely (non-copyable), so moving the value to another
    // thread moves the only access to the memory.
    private let pointer: UnsafeMutableRawPointer
    /// The number of secret bytes.
    public let count: Int

    /// Allocates `count` zero bytes of guarded memory.
    ///
    /// The corresponding C function is `sodium_malloc` (or a wiped region a secret of the same length
    /// released). Allocation failure (address space or `mlock` limits exhausted) stops the process: a secret
    /// must never fall back to ordinary memory.
    public init(count: Int) {
        precondition(count >= 0, "negative secret length")
        pointer = GuardedRegions.shared.allocate(max(count, 1))
        self.count = count
    }

    /// Copies `bytes` into guarded memory. The caller wipes its own copy.
    public init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count)
        if let base = bytes.baseAddress, bytes.count > 0 {
            pointer.copyMemory(from: base, byteCount: bytes.count)
        }
    }

    /// Copies `bytes` into guarded memory and wipes the array's storage.
    ///
    /// Use only for bytes that arrived in ordinary memory (a file, a socket); the array passed in is zeroed.
    public init(consuming bytes: inout [UInt8]) {
        self.init(count: bytes.count)
        bytes.withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress, buffer.count > 0 {
                pointer.copyMemory(from: base, byteCount: buffer.count)
                sodium_memzero(base, buffer.count)
            }
        }
        bytes.removeAll()
    }

    /// Creates a secret from `count` bytes written by `body`.
    public init(count: Int, initializingWith body: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        self.init(count: count)
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    deinit {
        // Wiped now; kept for the next secret of this length or freed (sodium_free).
        GuardedRegions.shared.release(pointer, size: max(count, 1))
    }

    /// Calls `body` with the bytes; the buffer is valid only inside the call.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Calls `body` with the bytes for writing; the buffer is valid only inside the call.
    public func withUnsafeMutableBytes<R, E: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    /// Whether both secrets hold the same bytes, in time that depends only on the lengths.
    ///
    /// The corresponding C function is `sodium_memcmp`.
    public func isEqual(to other: borrowing SecretBytes) -> Bool {
        guard count == other.count else { return false }
        if count == 0 { return true }
        return other.withUnsafeBytes { sodium_memcmp(pointer, $0.baseAddress, count) == 0 }
    }

    /// Whether the bytes equal `bytes`, in constant time for equal lengths.
    public func isEqual(to bytes: UnsafeRawBufferPointer) -> Bool {
        guard count == bytes.count else { return false }
        if count == 0 { return true }
        return sodium_memcmp(pointer, bytes.baseAddress, count) == 0
    }

    /// A copy in new guarded memory.
    public func duplicate() -> SecretBytes {
        SecretBytes(copying: UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The first `length` bytes in new guarded memory.
    public func prefix(_ length: Int) -> SecretBytes {
        SecretBytes(copying: UnsafeRawBufferPointer(start: pointer, count: min(length, count)))
    }

    /// A redaction: never the bytes.
    public var description: String { "SecretBytes(\(count) bytes, redacted)" }
}

/// Wipes ordinary memory that held a secret.
///
/// The corresponding C function is `sodium_memzero`.
public func secureZero(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    sodium_memzero(base, buffer.count)
}

/// Wipes an array that held a secret, then empties it.
public func secureZero(_ bytes: inout [UInt8]) {
    wipe(&bytes)
}

/// Wipes the storage of an array that held secret-derived values, then empties it.
public func wipe<Element: BitwiseCopyable>(_ array: inout [Element]) {
    array.withUnsafeMutableBytes { secureZero($0) }
    array.removeAll()
}
