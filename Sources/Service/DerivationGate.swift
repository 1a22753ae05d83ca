internal import TokenpinCore

/// Admits the key derivations that need much memory (Argon2id) one budget at a time.
///
/// The daemon shares one memory budget among all users; an operation takes its share only around the
/// derivation itself, never while it waits for a person, so a client that is slow to answer or stops reading
/// holds none of it. Local mode runs without a gate.
package protocol DerivationGate: Sendable {
    /// Runs `body` while `kibibytes` of memory are reserved for it.
    ///
    /// Throws `ServiceError.busy` when the memory does not free up in time; `body` has not run then.
    func withMemory<R: ~Copyable>(kibibytes: Int, _ body: () throws -> R) throws -> R
}

extension PINService {
    /// Derives the key of `kdf` from `secret`, through the derivation gate when the derivation is Argon2id.
    ///
    /// Every key derivation of the service goes through here, so the daemon's memory budget is taken in one
    /// place, after the locks (lock order: the user, the record, then memory).
    func deriveKey(_ kdf: KDFParameters, from secret: borrowing SecretBytes) throws -> SecretBytes {
        try withDerivationMemory(for: kdf) { () throws -> SecretBytes in try kdf.deriveKey(from: secret) }
    }

    /// Runs `body`, which derives with `kdf`, while the gate reserves the memory that derivation needs.
    ///
    /// `body` must not wait for a person, nor derive through the gate again (memory is taken once, never nested).
    func withDerivationMemory<R: ~Copyable>(for kdf: KDFParameters, _ body: () throws -> R) throws -> R {
        guard let derivationGate, kdf.algorithm == .argon2id13 else { return try body() }
        return try derivationGate.withMemory(kibibytes: kdf.memoryKiB, body)
    }
}
