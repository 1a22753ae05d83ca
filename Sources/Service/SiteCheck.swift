internal import TokenpinCore

extension PINService {
    /// Runs the site's `pin-check` program on a new PIN that passed the built-in policy: the reason it refused
    /// the PIN, or nil when it accepted it or none is configured.
    ///
    /// A program that gives no verdict (another exit status, a crash, a timeout, a file it cannot run) is a
    /// configuration error, so the operation stops before anything is saved. Through tokenpind the program
    /// comes from the daemon's own configuration: it reads only the root-owned system files.
    func siteCheckRefusal(_ candidate: borrowing PIN) throws(ServiceError) -> String? {
        guard let program = configuration.pinCheck else { return nil }
        do {
            switch try program.check(candidate) {
            case .accepted: return nil
            case .refused(let reason): return reason
            }
        } catch {
            logger.info("pin-check gave no verdict", [("code", error.code.rawValue), ("program", program.path)])
            throw .configuration(error.detail)
        }
    }
}
