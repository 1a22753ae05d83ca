import Foundation
import Synchronization
import Testing
import TokenpinAPDU
import TokenpinPCSC
import TokenpinTestSupport

/// The PC/SC side of the sandbox (`PCSCSandbox`): this target's ports and a PC/SC view of its readers.
enum Sandbox {
    /// A port (its index) and reader away from the first one (which `--with-card` may use); the CLI's tests use
    /// the first ports, these the last, so both can run at once.
    static func slot(_ number: Int) -> (portIndex: Int, reader: String) {
        let index = PCSCSandbox.ports.count - 1 - number
        return (index, PCSCSandbox.reader(forPortIndex: index))
    }

    /// Waits (polling, bounded) until a reader shows a card or shows none.
    static func waitForCard(in reader: String, present: Bool) throws {
        let context = try PCSCContext()
        for _ in 0..<400 {
            if let status = try context.readerStatuses().first(where: { $0.name == reader }),
                status.isCardPresent == present, !status.isMute
            {
                return
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        Issue.record("reader \(reader) did not show the card \(present ? "inserted" : "removed")")
    }
}

/// A simulated card in one of this target's readers, with its state in a directory of its own.
final class SimulatedCardInReader {
    let simulator: SimulatorProcess
    let directory: String
    var reader: String { simulator.reader }

    /// Starts tokenpin-sim on the port at `portIndex` and waits until its reader shows the card.
    init(portIndex: Int, arguments: [String] = []) throws {
        directory = temporaryDirectory("pcsc")
        simulator = try SimulatorProcess(portIndex: portIndex, state: directory + "/card.json", arguments: arguments)
        try Sandbox.waitForCard(in: simulator.reader, present: true)
    }

    /// Pulls the card and, unless told not to, waits until its reader shows it gone (the next test must not see
    /// it as still present).
    func stop(waitUntilAbsent: Bool = true) {
        guard simulator.isRunning else { return }
        simulator.kill()
        if waitUntilAbsent { try? Sandbox.waitForCard(in: reader, present: false) }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Raw OpenPGP commands (this target does not depend on TokenpinOpenPGP).
enum RawCommand {
    static let select = CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01])
    static let applicationRelatedData = CommandAPDU(ins: 0xCA, p1: 0x00, p2: 0x6E, le: 65536)
    static func verify(_ pin: String) -> CommandAPDU {
        CommandAPDU(ins: 0x20, p1: 0x00, p2: 0x82, data: Array(pin.utf8), isSensitive: true)
    }
    static let triesQuery = CommandAPDU(ins: 0x20, p1: 0x00, p2: 0x82)
}

@Suite("PC/SC in the sandbox", .serialized, .enabled(if: PCSCSandbox.isActive))
struct SandboxTests {
    @Test("the sandbox's readers are listed")
    func listReaders() throws {
        let context = try PCSCContext()
        let valid = context.isValid
        #expect(valid)
        let readers = try context.readers()
        for index in PCSCSandbox.ports.indices {
            #expect(readers.contains(PCSCSandbox.reader(forPortIndex: index)), "\(readers)")
        }
        let statuses = try context.readerStatuses()
        #expect(statuses.count == readers.count)
    }

    @Test("an empty reader: no card")
    func emptyReader() throws {
        let (_, reader) = Sandbox.slot(1)
        #expect(throws: CardTransportError(PCSCError.noSmartCard)) { _ = try PCSCCardConnection(reader: reader) }
        #expect(throws: CardTransportError(PCSCError.unknownReader)) {
            _ = try PCSCCardConnection(reader: "no such reader 00 00")
        }
    }

    @Test("connect, select the OpenPGP application, read data with extended length")
    func connectAndSelect() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        defer { simulator.stop() }

        let connection = try PCSCCardConnection(reader: reader)
        #expect(connection.readerName == reader)
        #expect(connection.activeProtocol == .t1)
        let atr = try #require(ATR(connection.atr))
        #expect(atr.protocols.contains(1))
        #expect(connection.lengthCapabilities.extendedLength)
        #expect(try connection.status().isCardPresent)

        let selected = try connection.send(RawCommand.select)
        #expect(selected.statusWord == .success)
        let data = try connection.send(RawCommand.applicationRelatedData)
        #expect(data.statusWord == .success)
        #expect(data.data.first == 0x6E)
        #expect(data.data.count > 100)
        try connection.disconnect()
        #expect(throws: CardTransportError(PCSCError.invalidHandle)) {
            _ = try connection.transmit(RawCommand.select.encoded())
        }
    }

    @Test("pulling the card mid-session gives a typed error, not a crash")
    func pullMidSession() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        let connection = try PCSCCardConnection(reader: reader)
        #expect(try connection.send(RawCommand.select).statusWord == .success)

        // Pulled right before a command: pcscd may not have noticed yet, and says the command failed.
        simulator.stop(waitUntilAbsent: false)
        do {
            _ = try connection.send(RawCommand.select)
            Issue.record("a command reached a pulled card")
        } catch let failure as CardTransportError {
            let error = try #require(failure.pcscError)
            #expect(error.isCardGone || error == .notTransacted, "\(error)")
            #expect(failure.hint != nil)
        }
        // Once pcscd has noticed, the card is gone.
        try Sandbox.waitForCard(in: reader, present: false)
        do {
            _ = try connection.send(RawCommand.select)
            Issue.record("a command reached a pulled card")
        } catch let failure as CardTransportError {
            #expect(failure.pcscError?.isCardGone == true, "\(failure)")
            #expect(failure.hint != nil)
        }
        // Transactions and status fail the same way; disconnecting still works.
        #expect { try connection.withTransaction { () } } throws: {
            ($0 as? CardTransportError)?.pcscError?.isCardGone == true
        }
        _ = try? connection.disconnect()
    }

    @Test("hot-plug: the monitor reports the card inserted and removed")
    func hotPlug() throws {
        let (index, reader) = Sandbox.slot(0)
        var monitor = try ReaderMonitor()
        #expect(monitor.readers.contains { $0.name == reader && !$0.isCardPresent })

        let simulator = try SimulatedCardInReader(portIndex: index)
        var events: [ReaderEvent] = []
        for _ in 0..<20 where !events.contains(ReaderEvent(.cardInserted, reader: reader)) {
            events += try monitor.waitForEvents(timeout: .seconds(1))
        }
        #expect(events.contains(ReaderEvent(.cardInserted, reader: reader)), "\(events)")
        #expect(monitor.readers.contains { $0.name == reader && $0.isCardPresent })

        simulator.stop()
        events = []
        for _ in 0..<20 where !events.contains(ReaderEvent(.cardRemoved, reader: reader)) {
            events += try monitor.waitForEvents(timeout: .seconds(1))
        }
        #expect(events.contains(ReaderEvent(.cardRemoved, reader: reader)), "\(events)")
        // Nothing else happens to this reader: a short wait brings nothing for it. Other suites run in the same
        // sandbox at the same time and plug cards into the other readers, so their events are not counted.
        #expect(try monitor.waitForEvents(timeout: .milliseconds(50)).filter { $0.reader == reader }.isEmpty)
    }

    @Test("a wait for events can be cancelled from another thread")
    func cancel() throws {
        let canceller = Mutex<PCSCCanceller?>(nil)
        let result = Mutex<Result<[ReaderEvent], PCSCError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            let outcome: Result<[ReaderEvent], PCSCError>
            do {
                var monitor = try ReaderMonitor()
                canceller.withLock { $0 = monitor.canceller }
                ready.signal()
                // Other suites plug cards in and out of this sandbox's readers meanwhile: their events end a wait
                // too, so wait again until the cancel ends one.
                var seen: [ReaderEvent] = []
                for _ in 0..<1000 { seen += try monitor.waitForEvents(timeout: nil) }
                outcome = .success(seen)
            } catch let error as PCSCError {
                ready.signal()
                outcome = .failure(error)
            } catch {
                ready.signal()
                outcome = .failure(.internalError)
            }
            result.withLock { $0 = outcome }
            finished.signal()
        }
        thread.start()
        ready.wait()
        // SCardCancel only reaches a wait already in progress: repeat until the waiter returns.
        var done = false
        for _ in 0..<200 where !done {
            canceller.withLock { $0 }?.cancel()
            done = finished.wait(timeout: .now() + .milliseconds(50)) == .success
        }
        #expect(done)
        let outcome = result.withLock { $0 }
        if case .failure(let error)? = outcome {
            #expect(error == .cancelled)
        } else {
            Issue.record("the wait returned \(String(describing: outcome))")
        }
    }

    /// An exclusive connection to `reader`, tried for up to two seconds while another process reads the card.
    static func exclusiveConnection(to reader: String) throws -> PCSCCardConnection {
        for _ in 1..<40 {
            if let connection = try? PCSCCardConnection(reader: reader, shareMode: .exclusive) { return connection }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return try PCSCCardConnection(reader: reader, shareMode: .exclusive)
    }

    @Test("a card held exclusively gives a sharing violation naming scdaemon")
    func sharingViolation() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        defer { simulator.stop() }
        // A connection an earlier test of this suite left to its watchdog (the deadline tests abandon calls that
        // overran) is dropped only once pcscd answers that call; until then pcscd counts it on the reader and refuses
        // an exclusive connection, so the holder tries for a while.
        let holder = try Self.exclusiveConnection(to: reader)
        do {
            _ = try PCSCCardConnection(reader: reader)
            Issue.record("a second connection got a card held exclusively")
        } catch {
            #expect(error.kind == .sharingViolation)
            #expect(error.pcscError == .sharingViolation)
            #expect(error.hint?.contains("scdaemon") == true)
        }
        try holder.disconnect()
        _ = try PCSCCardConnection(reader: reader)
    }

    @Test("by default a verified PIN ends with a card reset, which other connections are told of")
    func verifiedStateIsResetByDefault() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        defer { simulator.stop() }
        let other = try PCSCCardConnection(reader: reader)
        _ = try other.send(RawCommand.select)
        let connection = try PCSCCardConnection(reader: reader)
        #expect(!connection.leavesCardWhenCleared)
        try connection.withTransaction {
            _ = try connection.send(RawCommand.select)
            #expect(try connection.send(RawCommand.verify("123456")).statusWord == .success)
        }
        #expect(connection.lastSecurityRelease == .reset)
        do {
            _ = try other.send(RawCommand.triesQuery)
            Issue.record("the reset was not reported to the other connection")
        } catch let error as CardTransportError {
            #expect(error.kind == .cardReset)
            #expect(error.pcscError == .resetCard)
        }
        try other.reconnect()
        _ = try other.send(RawCommand.select)
        #expect(try other.send(RawCommand.triesQuery).statusWord == .wrongPIN(retriesLeft: 3))
        // Without a transaction: disconnecting resets the card too.
        #expect(try connection.send(RawCommand.select).statusWord == .success)
        #expect(try connection.send(RawCommand.verify("123456")).statusWord == .success)
        try connection.disconnect()
        #expect(connection.lastSecurityRelease == .reset)
        do {
            _ = try other.send(RawCommand.triesQuery)
            Issue.record("the reset at disconnect was not reported to the other connection")
        } catch let error as CardTransportError {
            #expect(error.kind == .cardReset)
            #expect(error.pcscError == .resetCard)
        }
    }

    @Test("with leavesCardWhenCleared the card clears the PIN on VERIFY FF and is left, not reset")
    func verifiedStateIsClearedAndTheCardLeft() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        defer { simulator.stop() }

        // Another client (gpg's scdaemon in shared mode) holds a connection throughout.
        let other = try PCSCCardConnection(reader: reader)
        _ = try other.send(RawCommand.select)

        // Inside a transaction: VERIFY then the status query both succeed...
        let connection = try PCSCCardConnection(reader: reader)
        connection.leavesCardWhenCleared = true
        let inside = try connection.withTransaction {
            _ = try connection.send(RawCommand.select)
            #expect(try connection.send(RawCommand.verify("123456")).statusWord == .success)
            return try connection.send(RawCommand.triesQuery).statusWord
        }
        #expect(inside == .success)
        #expect(!connection.holdsSecurityState)
        // ...the card dropped the PIN on VERIFY FF and was left, not reset: the other client's connection
        // goes on without SCARD_W_RESET_CARD, its application still selected, and finds the PIN not verified.
        #expect(connection.lastSecurityRelease == .leave)
        #expect(try other.send(RawCommand.triesQuery).statusWord == .wrongPIN(retriesLeft: 3))
        // The first connection goes on too, without selecting again.
        #expect(try connection.send(RawCommand.triesQuery).statusWord == .wrongPIN(retriesLeft: 3))

        // Without a transaction: disconnecting clears the PIN the same way.
        #expect(try connection.send(RawCommand.verify("123456")).statusWord == .success)
        #expect(connection.holdsSecurityState)
        #expect(try other.send(RawCommand.triesQuery).statusWord == .success)  // shared card, verified
        try connection.disconnect()
        #expect(connection.lastSecurityRelease == .leave)
        #expect(try other.send(RawCommand.triesQuery).statusWord == .wrongPIN(retriesLeft: 3))
    }

    @Test("even with leavesCardWhenCleared, CHANGE REFERENCE DATA (or a caller's say-so) resets the card")
    func changeReferenceDataResetsTheCard() throws {
        let (index, reader) = Sandbox.slot(0)
        let simulator = try SimulatedCardInReader(portIndex: index)
        defer { simulator.stop() }
        let other = try PCSCCardConnection(reader: reader)
        _ = try other.send(RawCommand.select)

        let connection = try PCSCCardConnection(reader: reader)
        connection.leavesCardWhenCleared = true
        try connection.withTransaction {
            _ = try connection.send(RawCommand.select)
            let change = CommandAPDU(ins: 0x24, p1: 0x00, p2: 0x81, data: Array("123456654321".utf8), isSensitive: true)
            #expect(try connection.send(change).statusWord == .success)
        }
        #expect(connection.lastSecurityRelease == .reset)
        #expect(!connection.holdsSecurityState)
        do {
            _ = try other.send(RawCommand.triesQuery)
            Issue.record("the reset was not reported to the other connection")
        } catch let error as CardTransportError {
            #expect(error.kind == .cardReset)
            #expect(error.pcscError == .resetCard)
        }
        try other.reconnect()
        _ = try other.send(RawCommand.select)
        #expect(try other.send(RawCommand.triesQuery).statusWord == .wrongPIN(retriesLeft: 3))
        // The first connection renegotiates after its own reset by itself; the application must be selected again.
        #expect(try connection.send(RawCommand.select).statusWord == .success)

        // A caller that knows more than the APDUs show forces the reset.
        connection.holdsSecurityState = true
        try connection.disconnect()
        #expect(connection.lastSecurityRelease == .reset)
    }
}
