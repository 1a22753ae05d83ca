import Dispatch
import Synchronization
internal import TokenpinCore

extension PINService {
    /// The next seal's challenge, made on another thread while the card works.
    ///
    /// A token verification re-seals the slot under a fresh challenge once the card has opened it. That challenge
    /// depends only on the card's public key in the binding, never on what the card answers, so the host's part
    /// of it (an ephemeral key pair and its agreement with the card's key, or a secret encrypted to the card's RSA
    /// key) is made by `freshAgreement` while the card verifies its PIN and answers the current challenge. The
    /// secret stays in guarded memory and is wiped when the agreement is dropped.
    ///
    /// The thread never outlives its owner: an agreement dropped untaken (the card refused, the verification
    /// failed) waits for it first. A process that exits at once after a failed verification must not have a
    /// thread still inside libcrypto (a PIV or NIST key's agreement) while `exit` runs OpenSSL's clean-up: that
    /// crashed the CLI with SIGSEGV after it had printed its error.
    struct AgreementInAdvance: ~Copyable {
        private let outcome = Outcome()

        /// Starts making a fresh agreement for `binding`'s card key on a thread of the shared pool.
        init(_ service: PINService, binding: TokenBinding) {
            let outcome = outcome
            DispatchQueue.global(qos: .userInitiated).async {
                do {
                    outcome.finish(.made(try service.freshAgreement(binding, reader: nil)))
                } catch {
                    outcome.finish(.failed(error))
                }
            }
        }

        /// Waits for the agreement and takes it, naming `reader` (when known) as where the card was just used.
        ///
        /// - Throws: what `freshAgreement` threw.
        consuming func take(reader: String?) throws -> KeyAgreement {
            switch outcome.take() {
            case .made(let agreement): return agreement.found(in: reader)
            case .failed(let error): throw error
            }
        }

        deinit {
            outcome.waitUntilFinished()
        }
    }

    /// What the thread made, handed over once.
    private final class Outcome: Sendable {
        enum Made: ~Copyable, Sendable {
            case made(KeyAgreement)
            case failed(any Error)
        }

        private let done = DispatchSemaphore(value: 0)
        private let made = Mutex<Made?>(nil)

        func finish(_ value: consuming sending Made) {
            var handed: Made? = consume value
            made.withLock { $0 = handed.take() }
            done.signal()
        }

        /// Returns once the thread has finished (at once after the first time).
        func waitUntilFinished() {
            done.wait()
            done.signal()
        }

        /// The outcome, once it is there. Called once (`AgreementInAdvance.take` consumes its owner).
        func take() -> Made {
            waitUntilFinished()
            // `finish` stored it before it signalled.
            return made.withLock { $0.take()! }
        }
    }
}
