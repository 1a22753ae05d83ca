package import TokenpinService
package import TokenpinSimulator

// The in-process simulated card as the service's card readers: what `--reader sim` (tokenpin-bench, which tokenpin
// runs for it, and tokenpind) and the demo plug in. A target of its own, so that only the executables that offer
// the simulated card link the simulator.

/// The in-process virtual card (`--reader sim`): one reader holding a `SimulatedCard` whose state lives in a
/// file next to the records, so every flow works on a bare machine.
package enum SimulatorReaders {
    /// The reader's name as `tokenpin readers` shows it.
    package static let readerName = "tokenpin virtual reader (simulated card)"

    /// One reader holding `card`.
    package static func readers(_ card: SimulatedCard) -> InProcessReaders {
        InProcessReaders([
            InProcessReaders.Reader(
                name: readerName, isPresent: { card.isPresent },
                connect: { SimulatedCardConnection(card: card) }, reset: { card.reset() })
        ])
    }
}

/// One simulated card per process and state file, so that every command of a run sees the same card
/// (SimulatorProfiles.swift: `shared(stateFile:profile:)`).
package enum SimulatorCards {}
