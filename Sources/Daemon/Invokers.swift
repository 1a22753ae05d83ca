import Dispatch
import FoundationEssentials
import Synchronization
import TokenpinCore
import TokenpinProtocol
import TokenpinService
internal import TokenpinSystem

// Who is asking: the class of each request, the budgets a class may use, the login-password throttle, and which
// cards a user may touch.

extension Authorization {
    /// The class of a request by `peer` for `user` (docs/pam.md, "Who is asking").
    ///
    /// A peer that is not root is the user (it may act on its own record only): `own`, whatever it says. A root
    /// peer without invoker fields is root's own tools or a PAM module of an older version: `local`. A root peer
    /// with them is a PAM stack: `remote` when a remote host is set (sshd, also when it logs in root, whose uid is
    /// the invoking one), else `own` when the invoking real uid is the user's (sudo, a locker run as the user),
    /// `local` when it is root's (login, a greeter), and `other` for any other real uid (`su victim`).
    package static func context(peer: Peer, user: String, invoker: Invoker?) -> AttemptContext {
        guard peer.isRoot else { return AttemptContext(class: .own, invokerUID: peer.uid, invokerName: peer.name) }
        guard let invoker else { return AttemptContext(class: .local, invokerUID: 0) }
        let attemptClass: AttemptClass
        let rhost = invoker.rhost.flatMap { $0.isEmpty ? nil : $0 }
        if rhost != nil {
            attemptClass = .remote  // not at the seat, whoever the invoking uid is (sshd logging in root)
        } else if let target = Peer.uid(ofUser: user), target == invoker.uid {
            attemptClass = .own
        } else if invoker.uid == 0 {
            attemptClass = .local
        } else {
            attemptClass = .other
        }
        return AttemptContext(
            class: attemptClass, invokerUID: invoker.uid, invokerName: Peer.loginName(uid: invoker.uid),
            service: invoker.service, rhost: rhost)
    }
}

extension Peer {
    /// The uid of the login name `user`, or nil when the password database has none.
    ///
    /// An entry that does not fit the look-up's 4 KiB buffer counts as none. The corresponding C function is
    /// `getpwnam_r`.
    package static func uid(ofUser user: String) -> UInt32? {
        (try? UserDatabase.user(named: user, bufferSize: 4096))??.userID
    }

    /// The login name of `uid`, or nil when it has none.
    package static func loginName(uid: UInt32) -> String? {
        let name = userName(uid: uid)
        return name == "uid\(uid)" ? nil : name
    }
}

/// Operations of remote and other attempts in flight, per target user and per source (the remote host of a remote
/// attempt, the invoking uid of another user's): a flood of parked `su victim` by one uid, or of ssh logins from one
/// host, fills only that source's share (and the victim's share of such attempts), never what the victim's own or
/// local verification, or another user's login, needs.
package final class InFlightAttempts: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    /// The most at once for one target user.
    package let maximumPerTarget: Int
    /// The most at once from one source.
    package let maximumPerSource: Int

    /// Creates the table.
    package init(maximumPerTarget: Int = 16, maximumPerSource: Int = 16) {
        self.maximumPerTarget = maximumPerTarget
        self.maximumPerSource = maximumPerSource
    }

    /// The source of a remote or other attempt: its remote host, or its invoking uid.
    package static func source(of context: AttemptContext) -> String {
        context.class == .remote ? "host:" + (context.rhost ?? "") : "uid:" + String(context.invokerUID ?? 0)
    }

    /// Takes a place for an attempt on `user` from `source`; false (holding nothing) when either share is full.
    package func begin(user: String, source: String) -> Bool {
        counts.withLock { counts in
            let target = "user:" + user
            guard counts[target, default: 0] < maximumPerTarget, counts[source, default: 0] < maximumPerSource else {
                return false
            }
            counts[target, default: 0] += 1
            counts[source, default: 0] += 1
            return true
        }
    }

    /// Gives the place back.
    package func end(user: String, source: String) {
        counts.withLock { counts in
            for key in ["user:" + user, source] {
                counts[key, default: 1] -= 1
                if counts[key] == 0 { counts[key] = nil }
            }
        }
    }
}

/// The login-password check before a first way in, throttled as a login is: one check at a time per uid, and
/// after each wrong password a delay (2 s, doubling up to 60 s) during which a check is answered `delayed`
/// without running PAM. Time is injected, so tests never sleep.
package final class PasswordThrottle: Sendable {
    struct State {
        var running = false
        var failures = 0
        var until: UInt64 = 0
    }

    private let states = Mutex<[UInt32: State]>([:])
    private let now: @Sendable () -> UInt64
    /// The first delay and the longest, in seconds.
    package static let firstDelay = 2
    package static let longestDelay = 60

    /// Uses `now` (nanoseconds, monotonic) as the clock.
    package init(now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) {
        self.now = now
    }

    /// The delay after `failures` consecutive wrong passwords: 2, 4, 8, 16, 32, 60, 60... seconds.
    package static func delay(afterFailures failures: Int) -> Int {
        guard failures > 0 else { return 0 }
        return min(longestDelay, firstDelay << min(failures - 1, 6))
    }

    /// Starts a check for `uid`: nil when it may run (it then holds the uid's turn until `end`), or the seconds to
    /// wait.
    package func begin(uid: UInt32) -> Int? {
        let time = now()
        return states.withLock { states in
            var state = states[uid, default: State()]
            if state.running { return Self.firstDelay }
            if time < state.until {
                return max(1, Int((state.until - time + 999_999_999) / 1_000_000_000))
            }
            state.running = true
            states[uid] = state
            return nil
        }
    }

    /// How a check ended.
    package enum Outcome: Sendable {
        /// The password was right.
        case accepted
        /// It was wrong.
        case rejected
        /// None was tried (the client cancelled or left at the prompt, the service file is broken).
        case notTried
    }

    /// Ends `uid`'s check: a right password clears the delay, a wrong one doubles it, none tried leaves it.
    package func end(uid: UInt32, _ outcome: Outcome) {
        let time = now()
        states.withLock { states in
            var state = states[uid, default: State()]
            state.running = false
            switch outcome {
            case .accepted:
                states[uid] = nil
                return
            case .notTried:
                states[uid] = state
                return
            case .rejected:
                break
            }
            state.failures = min(state.failures + 1, 1000)
            state.until = time + UInt64(Self.delay(afterFailures: state.failures)) * 1_000_000_000
            states[uid] = state
        }
    }
}

/// Cards being bound right now, so that two users cannot bind one card at once; a claim lasts until its user's
/// operation ends.
package final class CardClaims: Sendable {
    private let claims = Mutex<[String: String]>([:])

    /// Creates the table.
    package init() {}

    /// Claims `identity` for `user`; false when another user holds it.
    package func claim(_ identity: String, for user: String) -> Bool {
        claims.withLock { claims in
            if let holder = claims[identity], holder != user { return false }
            claims[identity] = user
            return true
        }
    }

    /// Releases every claim of `user`.
    package func release(_ user: String) {
        claims.withLock { claims in claims = claims.filter { $0.value != user } }
    }
}

/// The daemon's answer to which cards a user who is not root may touch: their own bound card, or to bind, a card
/// no other record binds, when `card-bind` lets them.
struct DaemonCardAccess: CardAccess {
    let store: RecordStore
    let policy: CardBindPolicy
    let peer: Peer
    let sessions: LoginSessions
    let claims: CardClaims

    func identities(boundToOthersThan user: String) -> Set<String> { store.boundIdentities(except: user) }

    func bindRefusal(for user: String) -> String? {
        let root = "root may bind a card for you (`tokenpin --user \(user) toggle token on` as root)"
        switch policy {
        case .anyUser:
            return nil
        case .root:
            return "card-bind = root: through tokenpind only root binds cards; " + root
        case .activeSession:
            switch sessions.activeLocalSession(of: peer.uid) {
            case .owned:
                return nil
            case .notOwned:
                return "card-bind = active-session: only the user who owns the active local session at this "
                    + "machine may bind a card, and \(user) does not; " + root
            case .unavailable(let why):
                return "card-bind = active-session: \(why), so no one is known to sit at this machine and only "
                    + "root may bind a card (or the admin sets card-bind = any-user); " + root
            }
        }
    }

    func claim(_ identity: String, for user: String) -> Bool { claims.claim(identity, for: user) }
}
