import Synchronization
import Testing
import TokenpinAPDU
import TokenpinTestSupport

@testable import TokenpinPCSC

/// The contexts a pool made and released, in order: what the pool's rules are checked against.
private final class ContextLedger: Sendable {
    private let state = Mutex((next: 100, released: [Int]()))

    var released: [Int] { state.withLock { $0.released } }

    func pool(capacity: Int = 2, failing: PCSCError? = nil) -> PCSCContextPool {
        PCSCContextPool(
            capacity: capacity,
            establish: { [self] () throws(PCSCError) -> Int in
                if let failing { throw failing }
                return state.withLock { state in
                    defer { state.next += 1 }
                    return state.next
                }
            },
            release: { [self] context in state.withLock { $0.released.append(context) } })
    }
}

@Suite("PC/SC context pool")
struct ContextPoolTests {
    @Test("a context given back serves the next lease; a new one is made only when none waits")
    func reuse() throws {
        let ledger = ContextLedger()
        let pool = ledger.pool()
        var first = try pool.lease()
        #expect(first.context == 100 && !first.reused)
        first.end(reusable: true)
        #expect(first.context == nil)
        first.end(reusable: true)  // a second end does nothing
        let second = try pool.lease()
        #expect(second.context == 100 && second.reused)
        let third = try pool.lease()
        #expect(third.context == 101 && !third.reused)
        #expect(pool.statistics.established == 2 && pool.statistics.reused == 1 && pool.statistics.waiting == 0)
        #expect(ledger.released == [])
    }

    @Test("no more than the capacity waits: the rest are released")
    func capacity() throws {
        let ledger = ContextLedger()
        let pool = ledger.pool(capacity: 2)
        var leases = try (0..<3).map { _ in try pool.lease() }
        for index in leases.indices { leases[index].end(reusable: true) }
        #expect(pool.statistics.waiting == 2)
        #expect(ledger.released == [102])
    }

    @Test(
        "a waiting context that fails as dead contexts fail is replaced and the call made again, once",
        arguments: [PCSCError.noService, .serviceStopped, .communicationError, .invalidHandle])
    func deadContextIsReplaced(error: PCSCError) throws {
        let ledger = ContextLedger()
        let pool = ledger.pool()
        var (a, b) = (try pool.lease(), try pool.lease())
        a.end(reusable: true)
        b.end(reusable: true)
        var lease = try pool.lease()
        #expect(lease.context == 101 && lease.reused)
        var calls: [Int] = []
        let answer = try lease.firstCall { context throws(PCSCError) -> String in
            calls.append(context)
            if context != 102 { throw error }  // every context made before pcscd "restarted" is dead
            return "connected"
        }
        #expect(answer == "connected")
        #expect(calls == [101, 102])
        #expect(lease.context == 102 && !lease.reused)
        // The dead one and the other waiting one (made by the same pcscd) are released; nothing waits now.
        #expect(ledger.released == [101, 100])
        #expect(pool.statistics.waiting == 0)
    }

    @Test("a new context that fails is not replaced: the error is the caller's")
    func newContextFailureIsThrown() throws {
        let ledger = ContextLedger()
        let pool = ledger.pool()
        var lease = try pool.lease()
        var calls = 0
        #expect(throws: PCSCError.noService) {
            try lease.firstCall { _ throws(PCSCError) -> Int in
                calls += 1
                throw PCSCError.noService
            }
        }
        #expect(calls == 1)
        #expect(ledger.released == [])
    }

    @Test("a waiting context that fails for the card's sake (no card, sharing) is not replaced")
    func cardFailureIsThrown() throws {
        let ledger = ContextLedger()
        let pool = ledger.pool()
        var first = try pool.lease()
        first.end(reusable: true)
        var lease = try pool.lease()
        var calls = 0
        #expect(throws: PCSCError.noSmartCard) {
            try lease.firstCall { _ throws(PCSCError) -> Int in
                calls += 1
                throw PCSCError.noSmartCard
            }
        }
        #expect(calls == 1 && lease.context == 100)
        #expect(ledger.released == [])
    }

    @Test("a replacement that cannot be made throws why (pcscd is not running)")
    func replacementFails() throws {
        let ledger = ContextLedger()
        let working = ledger.pool()
        let context = try #require(try working.lease().context)
        // A pool whose next establish fails, holding the context made above.
        let pool = ledger.pool(failing: .noService)
        pool.giveBack(context)
        var lease = try pool.lease()
        #expect(throws: PCSCError.noService) {
            try lease.firstCall { _ throws(PCSCError) -> Int in throw PCSCError.serviceStopped }
        }
        // The dead context was released once, and the lease holds none: ending it, or a call on it, releases and
        // hands out nothing more (pcscd still down: the restart case).
        #expect(lease.context == nil)
        lease.end(reusable: true, after: .noService)
        lease.end(reusable: false)
        #expect(throws: PCSCError.invalidHandle) { try lease.firstCall { $0 } }
        #expect(ledger.released == [100])
        #expect(pool.statistics.waiting == 0)
    }

    @Test("ending a use: back to the pool unless the error says the context is dead")
    func end() throws {
        let ledger = ContextLedger()
        let pool = ledger.pool(capacity: 4)
        var leases = try (0..<5).map { _ in try pool.lease() }
        leases[0].end(reusable: true)
        leases[1].end(reusable: true, after: .noSmartCard)
        leases[2].end(reusable: true, after: .sharingViolation)
        leases[3].end(reusable: true, after: .noService)
        leases[4].end(reusable: false)  // an overrun, or a card handle left on it
        #expect(pool.statistics.waiting == 3)
        #expect(ledger.released == [103, 104])
        pool.releaseWaiting()
        #expect(Set(ledger.released) == [100, 101, 102, 103, 104] && pool.statistics.waiting == 0)
    }
}

extension SandboxTests {
    /// A pool of its own over pcsc-lite, so that other suites' connections (which use the shared one) do not move
    /// what these tests count.
    static func ownPool() -> PCSCContextPool {
        PCSCContextPool(
            establish: { () throws(PCSCError) in try PCSCLibrary.establishContext() },
            release: { PCSCLibrary.releaseContext($0) })
    }

    static func connect(_ reader: String, _ pool: PCSCContextPool) throws -> PCSCCardConnection {
        try PCSCCardConnection(reader: reader, shareMode: .shared, protocols: .any, timeouts: .standard, pool: pool)
    }

    @Test("contexts pcscd no longer knows wait in the pool (as after its restart): the next connection makes a new one")
    func deadContextsInThePool() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        defer { simulator.stop() }
        // What a pcscd restart leaves: contexts this process established, which pcscd no longer knows (pcsc-lite's
        // client answers SCARD_E_INVALID_HANDLE for a released one, SCARD_E_NO_SERVICE after a restart).
        let pool = Self.ownPool()
        for _ in 0..<pool.capacity {
            let dead = try PCSCLibrary.establishContext()
            PCSCLibrary.releaseContext(dead)
            pool.giveBack(dead)
        }
        let connection = try Self.connect(reader, pool)
        #expect(try connection.send(RawCommand.select).statusWord == .success)
        try connection.disconnect()
        // One new context for both dead ones, which are gone from the pool.
        #expect(pool.statistics.established == 1 && pool.statistics.reused == 1 && pool.statistics.waiting == 0)
    }

    @Test("a connection closed cleanly leaves its context for the next one; one that failed to connect too")
    func contextIsReused() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        defer { simulator.stop() }
        let pool = Self.ownPool()
        do {
            let first = try Self.connect(reader, pool)
            try first.disconnect()
        }
        #expect(pool.statistics.established == 1 && pool.statistics.waiting == 1)
        do {
            let second = try Self.connect(reader, pool)
            #expect(try second.send(RawCommand.select).statusWord == .success)
        }
        #expect(pool.statistics.established == 1 && pool.statistics.reused == 1 && pool.statistics.waiting == 1)
        #expect(throws: CardTransportError.self) { _ = try Self.connect(Sandbox.slot(1).reader, pool) }
        #expect(pool.statistics.established == 1 && pool.statistics.reused == 2 && pool.statistics.waiting == 1)
        pool.releaseWaiting()
    }
}

extension SandboxTests {
    @Test("a connection's last reference is its user's: it goes, and its context is back, as soon as the user drops it")
    func connectionEndsWhereItsUserDropsIt() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        defer { simulator.stop() }
        let pool = Self.ownPool()
        var lingered = 0
        for _ in 0..<200 {
            weak var dropped: PCSCCardConnection?
            do {
                let connection = try Self.connect(reader, pool)
                dropped = connection
                _ = try connection.transmit(RawCommand.select.encoded())
            }
            // Had the connection's PC/SC thread still held it, its deinit would run there, waiting on that same
            // thread for its own disconnect until the deadline, and the reader would be refused meanwhile.
            if dropped != nil { lingered += 1 }
        }
        #expect(lingered == 0)
        #expect(pool.statistics.established == 1 && pool.statistics.waiting == 1)
        pool.releaseWaiting()
    }
}
