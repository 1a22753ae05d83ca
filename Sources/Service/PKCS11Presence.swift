internal import TokenpinCore
import TokenpinPKCS11

/// Whether a bound PKCS#11 key's token is in its slot, asked again and again (the daemon's removal watch).
///
/// Keeps one helper while the token is present and asks it (`PKCS11Helper.isPresent`: a non-blocking
/// `C_WaitForSlotEvent` where the module has it, else the slot's flags). When the token left, or the helper failed,
/// the helper is stopped, and each later question starts a new one that looks for the key by its URI and public key
/// hash, so a token put back (or another one put in) is judged afresh. A module may keep a token its process has
/// seen after it went (SoftHSM keeps a deleted token until it is loaded again), so after `freshEvery` answers from
/// one helper the next question starts a new one. Not thread-safe: one watcher thread asks.
package final class PKCS11PresenceProbe {
    /// The bound key's URI.
    package let uri: String
    /// The bound key's identity (`pkcs11-key:` and its public key hash).
    package let identity: String
    /// Answers one helper gives before a new one looks.
    package let freshEvery: Int
    private let access: PKCS11Access
    private var open: PKCS11TokenKey?
    private var answered = 0

    package init(uri: String, identity: String, access: PKCS11Access, freshEvery: Int = 10) {
        self.uri = uri
        self.identity = identity
        self.access = access
        self.freshEvery = max(1, freshEvery)
    }

    deinit { open?.close() }

    /// Whether the bound key's token is there now.
    package func isPresent() -> Bool {
        if let key = open, answered < freshEvery {
            do {
                if try key.helper.isPresent(key.key) {
                    answered += 1
                    return true
                }
            } catch {
                // The helper or module failed: it cannot tell; a fresh helper looks again below.
            }
        }
        close()
        guard
            let key = try? PKCS11TokenKey.open(
                module: access.source, uri: uri, timeout: access.timeoutMilliseconds, executable: access.helper,
                environment: access.environment)
        else { return false }
        guard key.identity == identity else {
            key.close()
            return false
        }
        open = key
        return true
    }

    /// Stops the helper.
    package func close() {
        open?.close()
        open = nil
        answered = 0
    }
}
