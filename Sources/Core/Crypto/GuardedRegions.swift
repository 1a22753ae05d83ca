internal import CSodium
import Synchronization

/// Guarded memory released by secrets, wiped and kept for the next secret of the same length.
///
/// A `sodium_malloc` maps four pages, turns two of them into guard pages, locks the secret's page and excludes it
/// from core dumps, and `sodium_free` undoes all of it: ten system calls, about 25 µs a pair on a small virtual
/// machine, paid seven times by a token verify. A region a secret releases is wiped at once (`sodium_memzero`) and
/// kept as it is, still between its guard pages, locked and out of core dumps, for the next secret of exactly the
/// same length (so its last byte still sits against the guard page). At most `capacity` regions are kept (one
/// locked page each); the rest are freed. Thread safe.
final class GuardedRegions: Sendable {
    /// The regions every `SecretBytes` shares.
    static let shared = GuardedRegions(capacity: 8)

    /// How many wiped regions are kept at most.
    let capacity: Int
    /// Wiped regions, their sizes and addresses (a raw pointer is not `Sendable`; the lock orders access). At most
    /// `capacity` entries, searched from the end: a list, where a dictionary's first use in a process cost 0.25
    /// million instructions of generic set-up (callgrind, a whole `tokenpin verify`).
    private let kept = Mutex<[(size: Int, address: UInt)]>([])

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// A region of `size` bytes, all zero: a kept one, or a new one from `sodium_malloc`.
    ///
    /// Allocation failure (address space or `mlock` limits exhausted) stops the process: a secret must never
    /// fall back to ordinary memory.
    func allocate(_ size: Int) -> UnsafeMutableRawPointer {
        Sodium.ensureReady()
        let reused = kept.withLock { regions -> UInt? in
            regions.lastIndex { $0.size == size }.map { regions.remove(at: $0).address }
        }
        if let reused, let pointer = UnsafeMutableRawPointer(bitPattern: reused) { return pointer }
        guard let memory = sodium_malloc(size) else {
            fatalError("sodium_malloc(\(size)) failed: guarded memory exhausted")
        }
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        return memory
    }

    /// Wipes a region from `allocate(_:)` and keeps it, or frees it when `capacity` regions are kept already.
    ///
    /// The corresponding C functions are `sodium_memzero` and `sodium_free`.
    func release(_ pointer: UnsafeMutableRawPointer, size: Int) {
        sodium_memzero(pointer, size)
        let address = UInt(bitPattern: pointer)
        let keptIt = kept.withLock { regions -> Bool in
            guard regions.count < capacity else { return false }
            regions.append((size, address))
            return true
        }
        if !keptIt { sodium_free(pointer) }
    }

    /// How many wiped regions of `size` bytes are kept now (for tests).
    func keptCount(_ size: Int) -> Int {
        kept.withLock { regions in regions.count { $0.size == size } }
    }

    /// Calls `body` with the bytes of the kept region of `size` bytes that `allocate(_:)` would hand out next
    /// (for tests: a kept region must hold no secret).
    func withNextKept<R>(_ size: Int, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        kept.withLock { regions in
            body(
                regions.last { $0.size == size }.flatMap { UnsafeRawPointer(bitPattern: $0.address) }.map {
                    UnsafeRawBufferPointer(start: $0, count: size)
                })
        }
    }
}
