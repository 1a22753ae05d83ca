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
        let first = try pool.lease()
        #expect(first.context == 100 && !first.reused)
        pool.giveBack(first.context)
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
        let leases = try (0..<3).map { _ in try pool.lease() }
        for lease in leases { pool.giveBack(lease.context) }
        #expect(pool.statistics.waiting == 2)
        #expect(ledger.released == [102])
    }

    @Test(
        "a waiting context that fails as dead contexts fail is replaced and the call made again, once",
        arguments: [PCSCError.noService, .serviceStopped, .communicationError, .invalidHandle])
    func deadContextIsReplaced(error: PCSCError) throws {
        let ledger = ContextLedger()
        let pool = ledger.pool()
        let (a, b) = (try pool.lease(), try pool.lease())
        pool.giveBack(a.context)
        pool.giveBack(b.context)
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
        pool.giveBack(try pool.lease().context)
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
        let context = try working.lease().context
        // A pool whose next establish fails, holding the context made above.
        let pool = ledger.pool(failing: .noService)
        pool.giveBack(context)
        var lease = try pool.lease()
        #expect(throws: PCSCError.noService) {
            try lease.firstCall { _ throws(PCSCError) -> Int in throw PCSCError.serviceStopped }
        }
        #expect(ledger.released == [100])
    }

    @Test("ending a use: back to the pool unless the error says the context is dead")
    func end() throws {
        let ledger = ContextLedger()
        let pool = ledger.pool(capacity: 4)
        let leases = try (0..<4).map { _ in try pool.lease() }
        pool.end(leases[0].context, after: nil)
        pool.end(leases[1].context, after: .noSmartCard)
        pool.end(leases[2].context, after: .sharingViolation)
        pool.end(leases[3].context, after: .noService)
        #expect(pool.statistics.waiting == 3)
        #expect(ledger.released == [103])
        pool.releaseWaiting()
        #expect(Set(ledger.released) == [100, 101, 102, 103] && pool.statistics.waiting == 0)
    }
}

extension SandboxTests {
    @Test("contexts pcscd no longer knows wait in the pool (as after its restart): the next connection makes a new one")
    func deadContextsInThePool() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        defer { simulator.stop() }
        // What a pcscd restart leaves: contexts this process established, which pcscd no longer knows (pcsc-lite's
        // client answers SCARD_E_INVALID_HANDLE for a released one, SCARD_E_NO_SERVICE after a restart).
        PCSCContextPool.shared.releaseWaiting()
        for _ in 0..<PCSCContextPool.shared.capacity {
            let dead = try PCSCLibrary.establishContext()
            PCSCLibrary.releaseContext(dead)
            PCSCContextPool.shared.giveBack(dead)
        }
        let before = PCSCContextPool.shared.statistics
        let connection = try PCSCCardConnection(reader: reader)
        #expect(try connection.send(RawCommand.select).statusWord == .success)
        try connection.disconnect()
        #expect(PCSCContextPool.shared.statistics.established > before.established)
        let statuses = try PCSCContext.readerStatuses(within: .seconds(5))
        #expect(statuses.contains { $0.name == reader && $0.isCardPresent })
    }

    @Test("a connection closed cleanly leaves its context for the next one")
    func contextIsReused() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        defer { simulator.stop() }
        do {
            let first = try PCSCCardConnection(reader: reader)
            try first.disconnect()
        }
        let before = PCSCContextPool.shared.statistics
        #expect(before.waiting >= 1)
        let second = try PCSCCardConnection(reader: reader)
        #expect(try second.send(RawCommand.select).statusWord == .success)
        #expect(PCSCContextPool.shared.statistics.reused > before.reused)
    }
}
