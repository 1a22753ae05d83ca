import Dispatch
import Foundation
import Synchronization
import Testing
import TokenpinAPDU
import TokenpinTestSupport

@testable import TokenpinPCSC

/// The watchdog alone: a call that does not return in time is given up, and the reader counts as still waiting
/// until the call comes back.
@Suite("PC/SC deadlines")
struct WatchdogTests {
    @Test("a call that overruns throws a timeout at its deadline; later calls throw at once")
    func overrun() throws {
        let reader = "watchdog test \(UUID().uuidString)"
        let watchdog = PCSCWatchdog(reader: reader)
        let release = DispatchSemaphore(value: 0)
        #expect(try watchdog.run("SCardTransmit", timeout: .seconds(5)) { 42 } == 42)
        #expect {
            try watchdog.run("SCardTransmit", timeout: .milliseconds(50)) { release.wait() }
        } throws: { error in
            guard let error = error as? CardTransportError, let timeout = error.deadline else { return false }
            return timeout.reader == reader && timeout.timeout == .milliseconds(50) && !timeout.stillWaiting
                && error.kind == .timeout && error.code == nil
                && error.description == "the reader \"\(reader)\" did not answer within 0 s (SCardTransmit)"
        }
        #expect(watchdog.hasGivenUp)
        #expect(PCSCWatchdog.isStillWaiting(reader))
        // Nothing more is sent: the next call fails without running.
        let ran = Mutex(false)
        #expect {
            try watchdog.run("SCardTransmit", timeout: .seconds(5)) { ran.withLock { $0 = true } }
        } throws: { Self.isStillWaiting($0) }
        release.signal()
        // The call comes back (pcscd answered): the reader no longer counts as waiting.
        for _ in 0..<200 where PCSCWatchdog.isStillWaiting(reader) { usleep(10_000) }
        #expect(!PCSCWatchdog.isStillWaiting(reader))
        #expect(!ran.withLock { $0 })
    }

    @Test("errors and results of calls in time pass through unchanged")
    func inTime() throws {
        let watchdog = PCSCWatchdog(reader: "watchdog test \(UUID().uuidString)")
        #expect(throws: CardTransportError(PCSCError.removedCard)) {
            try watchdog.run("SCardTransmit", timeout: .seconds(5)) { () throws(PCSCError) in throw .removedCard }
        }
        #expect(try watchdog.run("SCardStatus", timeout: .seconds(5)) { [1, 2, 3] } == [1, 2, 3])
        #expect(!watchdog.hasGivenUp)
    }

    @Test("key generation has its own, longer deadline")
    func keyGenerationDeadline() {
        let timeouts = CardTimeouts(seconds: 10)
        #expect(timeouts.deadline(for: [0x00, 0x47, 0x80, 0x00, 0x02, 0xB8, 0x00]) == .seconds(120))
        #expect(timeouts.deadline(for: [0x00, 0x2A, 0x80, 0x86]) == .seconds(10))
        #expect(CardTimeouts(seconds: 300).keyGeneration == .seconds(300))
        #expect(CardTimeouts(seconds: 0).command == .seconds(1))
    }

    @Test("the message names the reader and the deadline; pcscd itself when listing")
    func messages() {
        #expect(
            CardTimeoutError(reader: "R 00 00", timeout: .seconds(10), call: "SCardTransmit").description
                == "the reader \"R 00 00\" did not answer within 10 s (SCardTransmit)")
        #expect(
            CardTimeoutError(reader: nil, timeout: .milliseconds(2500), call: "SCardGetStatusChange").description
                == "pcscd did not answer within 2.5 s (SCardGetStatusChange)")
        #expect(
            CardTimeoutError(reader: "R", timeout: .seconds(10), call: "SCardConnect", stillWaiting: true)
                .description.contains("has not answered since"))
        #expect(
            CardTransportError(CardTimeoutError(reader: nil, timeout: .seconds(1), call: "SCardGetStatusChange")).kind
                == .serviceUnavailable)
    }

    /// Whether `error` is a deadline that passed earlier, with the reader still owing its answer.
    static func isStillWaiting(_ error: any Error) -> Bool {
        guard let error = error as? CardTransportError else { return false }
        return error.kind == .timeout && error.deadline?.stillWaiting == true
    }
}

/// A card in a vpcd reader that stops answering (`stall`) or answers after the deadline (`late`), through the real
/// pcscd: every call comes back by its deadline, and the reader works again once the card is pulled or answered.
///
/// Part of the sandbox suite, which runs its tests one at a time: vpcd serves its two slots (this target's two
/// readers) from one driver, so a card that stalls in one wedges the other until it is pulled.
extension SandboxTests {
    static let short = CardTimeouts(command: .seconds(1), keyGeneration: .seconds(2))

    /// Waits, bounded, until no call to `reader` is outstanding.
    static func waitUntilAnswered(_ reader: String) {
        for _ in 0..<1000 where PCSCWatchdog.isStillWaiting(reader) { usleep(10_000) }
    }

    @Test("a card that stalls mid-command: the call ends at its deadline, the reader is refused until the card goes")
    func stall() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index, arguments: ["--fault", "stall@CA*1"])
        let connection = try PCSCCardConnection(reader: reader, timeouts: Self.short)
        #expect(try connection.send(RawCommand.select).statusWord == .success)
        let start = ContinuousClock.now
        #expect {
            try connection.withTransaction { _ = try connection.send(RawCommand.applicationRelatedData) }
        } throws: { error in
            (error as? CardTransportError)
                == CardTransportError(
                    CardTimeoutError(reader: reader, timeout: Self.short.command, call: "SCardTransmit"))
        }
        #expect(ContinuousClock.now - start < .seconds(6), "the wait was bounded")
        #expect { _ = try connection.transmit(RawCommand.select.encoded()) } throws: {
            WatchdogTests.isStillWaiting($0)
        }
        // Another connection to the wedged reader is refused at once.
        #expect { _ = try PCSCCardConnection(reader: reader, timeouts: Self.short) } throws: {
            WatchdogTests.isStillWaiting($0)
        }
        connection.close()
        // The card is pulled: vpcd and pcscd give up on it, the call that overran returns, the reader is free.
        simulator.stop()
        Self.waitUntilAnswered(reader)
        #expect(!PCSCWatchdog.isStillWaiting(reader))
        let again = try SimulatedCardInReader(portIndex: index)
        defer { again.stop() }
        let fresh = try PCSCCardConnection(reader: reader, timeouts: Self.short)
        #expect(try fresh.send(RawCommand.select).statusWord == .success)
        fresh.close()
    }

    @Test("a card that answers after the deadline: the late answer is never used, and the reader works again")
    func late() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index, arguments: ["--fault", "late:2500@CA*1"])
        defer { simulator.stop() }
        let connection = try PCSCCardConnection(reader: reader, timeouts: Self.short)
        #expect(try connection.send(RawCommand.select).statusWord == .success)
        #expect { _ = try connection.send(RawCommand.applicationRelatedData) } throws: {
            ($0 as? CardTransportError)?.kind == .timeout
        }
        // The answer comes 2.5 s after the command; the call that overran takes it and lets the reader go.
        Self.waitUntilAnswered(reader)
        #expect(!PCSCWatchdog.isStillWaiting(reader))
        let fresh = try PCSCCardConnection(reader: reader, timeouts: Self.short)
        #expect(try fresh.send(RawCommand.select).statusWord == .success)
        let data = try fresh.send(RawCommand.applicationRelatedData)
        #expect(data.statusWord == .success && data.data.first == 0x6E)
        fresh.close()
    }

    @Test("listing the readers has a deadline too")
    func listWithinDeadline() throws {
        let statuses = try PCSCContext.readerStatuses(within: .seconds(5))
        #expect(statuses.count >= PCSCSandbox.ports.count)
    }
}
