import Dispatch
import Synchronization
import TokenpinSystem

/// Says on standard error that a step is slow: armed when a prompt is answered, it prints its line only when the
/// command has written nothing else a second later (a long key derivation, the calibration, a key generated
/// on a card). Never armed with `--json`, `--quiet` or when standard error is not a terminal.
final class SlowStepNotice: Sendable {
    /// The one notice of this process: any output cancels it (`Console.write`).
    static let shared = SlowStepNotice()

    private struct State {
        var generation = 0
        var message: String?
    }

    private let state = Mutex(State())

    /// How long a step runs before its line is printed: a second. Debug builds (the tests) take another delay
    /// from `TOKENPIN_SLOW_STEP_MS`, so a test can make a step slow for certain without racing the clock.
    static let delay: Int = {
        #if DEBUG
            if let value = CurrentProcess.environmentValue("TOKENPIN_SLOW_STEP_MS"), let milliseconds = Int(value),
                (0...60_000).contains(milliseconds)
            {
                return milliseconds
            }
        #endif
        return 1000
    }()

    /// Prints `message` on stderr after `milliseconds` unless something cancels it first.
    func arm(_ message: String, milliseconds: Int = SlowStepNotice.delay) {
        let generation = state.withLock { state -> Int in
            state.generation += 1
            state.message = message
            return state.generation
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
            self.fire(generation)
        }
    }

    /// Drops a pending line.
    func cancel() {
        state.withLock { state in
            state.generation += 1
            state.message = nil
        }
    }

    private func fire(_ generation: Int) {
        // The write happens under the lock on purpose: a command's result written meanwhile (which cancels
        // first) can then never be followed by a stale "still working" line. It is one short write to stderr.
        state.withLock { state in
            guard state.generation == generation, let message = state.message else { return }
            state.message = nil
            try? FileDescriptor.withBorrowed(2) { (stream: borrowing FileDescriptor) throws(Errno) in
                try stream.writeAll(Array((message + "\n").utf8))
            }
        }
    }
}
