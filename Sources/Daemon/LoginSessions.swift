internal import CSystemd
import Synchronization
internal import TokenpinSystem

/// Who sits at this machine: the owners of the active sessions of logind's seats, through sd-login.
///
/// libsystemd is loaded with `dlopen` the first time it is asked, so tokenpind starts and serves where there is no
/// systemd (a container, another init): there, and where logind keeps no seats, nobody owns an active local
/// session and `card-bind = active-session` lets no user but root bind a card (docs/security.md).
package final class LoginSessions: Sendable {
    /// What the check found for a uid.
    package enum Ownership: Sendable, Equatable {
        /// The uid owns the active, local session of a seat.
        case owned
        /// logind answered, and that uid owns no seat's active local session.
        case notOwned
        /// There is no logind to ask (libsystemd missing, no seats), with the reason.
        case unavailable(String)
    }

    /// The functions looked up in libsystemd, once.
    struct Library: @unchecked Sendable {
        // @unchecked Sendable: C function pointers of a library that stays loaded; sd-login's functions read
        // logind's state files and are safe to call from any thread.
        let getSeats: tokenpin_sd_get_seats
        let seatGetActive: tokenpin_sd_seat_get_active
        let sessionIsRemote: tokenpin_sd_session_is_remote
        let sessionIsActive: tokenpin_sd_session_is_active
        let sessionGetUID: tokenpin_sd_session_get_uid
    }

    private let library: Mutex<Result<Library, LoadFailure>?> = Mutex(nil)
    private let libraryName: String

    struct LoadFailure: Error { var reason: String }

    /// Uses `libraryName` (libsystemd's soname).
    package init(libraryName: String = "libsystemd.so.0") {
        self.libraryName = libraryName
    }

    /// Whether `uid` owns the active local session of a seat: `sd_get_seats`, then for each seat
    /// `sd_seat_get_active`, and that session must be active and not remote (`sd_session_is_active`,
    /// `sd_session_is_remote`) and belong to `uid` (`sd_session_get_uid`).
    package func activeLocalSession(of uid: UInt32) -> Ownership {
        let loaded: Library
        switch load() {
        case .success(let library): loaded = library
        case .failure(let failure): return .unavailable(failure.reason)
        }
        var seatList: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = loaded.getSeats(&seatList)
        let listed = seatList != nil
        let seats = [String](takingMallocated: seatList, count: Int(count))  // sd-login's copies, freed here
        guard count > 0, listed else { return .unavailable("logind reports no seats") }
        for seat in seats {
            var active: UnsafeMutablePointer<CChar>?
            var owner: UInt32 = 0
            guard loaded.seatGetActive(seat, &active, &owner) >= 0, let session = String(takingMallocated: active)
            else { continue }
            var sessionUID: UInt32 = 0
            guard owner == uid, loaded.sessionGetUID(session, &sessionUID) >= 0, sessionUID == uid else { continue }
            if loaded.sessionIsActive(session) > 0 && loaded.sessionIsRemote(session) == 0 { return .owned }
        }
        return .notOwned
    }

    /// Loads libsystemd and looks up the functions, once; later calls get the same answer.
    ///
    /// The corresponding C functions are `dlopen` and `dlsym`.
    private func load() -> Result<Library, LoadFailure> {
        library.withLock { cached in
            if let cached { return cached }
            let result = Self.open(libraryName)
            cached = result
            return result
        }
    }

    private static func open(_ name: String) -> Result<Library, LoadFailure> {
        guard let handle = try? DynamicLibrary(loading: name) else {
            return .failure(LoadFailure(reason: "\(name) cannot be loaded (no systemd)"))
        }
        func symbol<T>(_ symbolName: String, as type: T.Type) -> T? {
            guard let address = handle.symbol(named: symbolName) else { return nil }
            return unsafeBitCast(address, to: type)
        }
        guard let getSeats = symbol("sd_get_seats", as: tokenpin_sd_get_seats.self),
            let seatGetActive = symbol("sd_seat_get_active", as: tokenpin_sd_seat_get_active.self),
            let sessionIsRemote = symbol("sd_session_is_remote", as: tokenpin_sd_session_is_remote.self),
            let sessionIsActive = symbol("sd_session_is_active", as: tokenpin_sd_session_is_active.self),
            let sessionGetUID = symbol("sd_session_get_uid", as: tokenpin_sd_session_get_uid.self)
        else {
            return .failure(LoadFailure(reason: "\(name) lacks the sd-login functions"))
        }
        handle.keepLoaded()  // the function pointers outlive `handle`
        return .success(
            Library(
                getSeats: getSeats, seatGetActive: seatGetActive, sessionIsRemote: sessionIsRemote,
                sessionIsActive: sessionIsActive, sessionGetUID: sessionGetUID))
    }
}
