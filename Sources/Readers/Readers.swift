import FoundationEssentials
import TokenpinAPDU
import TokenpinPCSC
package import TokenpinService
internal import TokenpinSystem

// The card sources the executables plug into the service: PC/SC readers through pcscd (the in-process simulated
// card is TokenpinSimulatedReaders'). Kept out of TokenpinService so the service never imports PC/SC.

/// The PC/SC readers through pcscd: what tokenpin uses with real tokens. Every wait on pcscd and a reader has a
/// deadline (`timeouts`, from `card-timeout`).
package struct PCSCReaders: CardReaders {
    /// How long pcscd and each reader may take to answer.
    package var timeouts: CardTimeouts

    /// The readers pcscd knows.
    package init(timeouts: CardTimeouts = .standard) { self.timeouts = timeouts }

    package func list() throws(ServiceError) -> [ReaderPresence] {
        do {
            return try PCSCContext.readerStatuses(within: timeouts.command).map {
                ReaderPresence(name: $0.name, cardPresent: $0.state.contains(.present))
            }
        } catch {
            throw ServiceError(error)
        }
    }

    package func open(_ reader: String) throws(ServiceError) -> any CardConnection {
        do {
            return try PCSCCardConnection(reader: reader, timeouts: timeouts)
        } catch {
            // Who holds it, said the same way wherever tokenpin meets it (verify, PAM through tokenpind, doctor).
            if error.kind == .sharingViolation { throw .cardHeldElsewhere(CardHolders.diagnosis(reader: reader)) }
            throw ServiceError(error)
        }
    }

    package func withTimeouts(_ timeouts: CardTimeouts) -> any CardReaders { PCSCReaders(timeouts: timeouts) }

    /// The reader's keypad, asked over a direct connection (with or without a card); nil when it has none or does
    /// not answer in time.
    package func pinpad(of reader: String) -> ReaderPinpad? {
        (try? PCSCReaderPinpad.detect(reader: reader, within: timeouts.command)).map(ReaderPinpad.init)
    }
}

/// Readers that could not be set up; every use reports why.
package struct UnavailableReaders: CardReaders {
    /// Why there are no readers.
    package let error: ServiceError

    /// Readers that report `error` on every use.
    package init(error: ServiceError) { self.error = error }

    package func list() throws(ServiceError) -> [ReaderPresence] { throw error }
    package func open(_ reader: String) throws(ServiceError) -> any CardConnection { throw error }
}
