import Testing
import TokenpinSystem

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct SignalsTests {
    @Test func theNamesAreTheCNumbers() {
        #expect(Signal.terminate.rawValue == SIGTERM)
        #expect(Signal.interrupt.rawValue == SIGINT)
        #expect(Signal.hangUp.rawValue == SIGHUP)
        #expect(Signal.brokenPipe.rawValue == SIGPIPE)
        #expect(Signal.kill.rawValue == SIGKILL)
    }

    @Test func ignoringASignalMakesItIgnored() throws {
        // SIGURG: no test or library of this process handles it, and its default is to ignore it anyway.
        let urgent = Signal(rawValue: SIGURG)
        defer { _ = signal(SIGURG, SIG_DFL) }
        #expect(try Signals.isIgnored(urgent) == false)
        try Signals.ignore(urgent)
        #expect(try Signals.isIgnored(urgent))
    }

    @Test func killCannotBeIgnored() {
        #expect(throws: Errno.invalidArgument) { try Signals.ignore(.kill) }
        #expect(throws: Errno.invalidArgument) { try Signals.ignore(Signal(rawValue: SIGSTOP)) }
        #expect(throws: Errno.invalidArgument) { try Signals.ignore(Signal(rawValue: 0)) }
        #expect(throws: Errno.invalidArgument) { _ = try Signals.isIgnored(Signal(rawValue: 1000)) }
    }
}
