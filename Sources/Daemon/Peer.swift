import FoundationEssentials
import TokenpinService
internal import TokenpinSystem

/// The process at the other end of a connection, as the kernel reports it (`SO_PEERCRED`).
package struct Peer: Sendable, Equatable {
    /// The peer's process id.
    package var pid: Int32
    /// The peer's user id.
    package var uid: UInt32
    /// The peer's group id.
    package var gid: UInt32
    /// The login name of `uid`, or `uid<N>` when it has none.
    package var name: String
    /// The uid the connection is accounted to: `uid`, or for a root peer the real uid of its process (`su`,
    /// `sudo` are root processes acting for the user who ran them), so one user's setuid processes fill only
    /// that user's share of connections.
    package var accountingUID: UInt32

    /// Creates a peer.
    package init(pid: Int32, uid: UInt32, gid: UInt32, name: String, accountingUID: UInt32? = nil) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.name = name
        self.accountingUID = accountingUID ?? uid
    }

    /// Whether the peer is root.
    package var isRoot: Bool { uid == 0 }

    /// The real uid of process `pid` (`/proc/PID/status`, its `Uid:` line), or nil when it cannot be read.
    ///
    /// Read right after `accept`, while the peer is connected. A pid reused in between would only move the
    /// connection into another uid's share.
    package static func realUID(ofProcess pid: Int32) -> UInt32? {
        guard pid > 0,
            let file = try? FileDescriptor.openForReading("/proc/\(pid)/status"),
            let bytes = try? file.readAll(maximumCount: 8192)
        else { return nil }
        // `Uid:\t<real>\t<effective>\t<saved>\t<filesystem>`.
        for line in bytes.split(separator: 0x0A) where line.starts(with: Array("Uid:".utf8)) {
            let fields = line.dropFirst(4).split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
            return fields.first.flatMap { UInt32(String(decoding: $0, as: UTF8.self)) }
        }
        return nil
    }

    /// The credentials of the peer of `fd`.
    ///
    /// The corresponding C function is `getsockopt(SO_PEERCRED)`.
    package static func of(socket fd: Int32) -> Peer? {
        let read = { (socket: borrowing FileDescriptor) throws(Errno) in try socket.peerCredentials() }
        guard let credentials = try? FileDescriptor.withBorrowed(fd, read) else { return nil }
        let (pid, uid, gid) = (credentials.processID, credentials.userID, credentials.groupID)
        let accounting = uid == 0 ? realUID(ofProcess: pid) ?? 0 : uid
        return Peer(pid: pid, uid: uid, gid: gid, name: userName(uid: uid), accountingUID: accounting)
    }

    /// The login name of `uid` from the password database, or `uid<N>`.
    ///
    /// An entry that does not fit the look-up's 4 KiB buffer counts as none. The corresponding C function is
    /// `getpwuid_r`.
    package static func userName(uid: UInt32) -> String {
        (try? UserDatabase.user(id: uid, bufferSize: 4096))??.name ?? "uid\(uid)"
    }
}

/// Who may act on which record.
///
/// A user acts on their own record only; root may name any user, and is the only one who may touch another
/// user's record at all (so resetting another user's lock is root's alone). Every operation, `watch`
/// included, goes through this check.
package enum Authorization {
    /// The user `peer` acts on when it asks for `requested` (nil: itself), or the refusal.
    package static func target(peer: Peer, requested: String?) -> Result<String, ServiceError> {
        guard let requested, requested != peer.name else { return .success(peer.name) }
        guard peer.isRoot else {
            return .failure(
                .permissionDenied(
                    "\(peer.name) may act on their own record only; only root may name another user (\(requested))"))
        }
        return .success(requested)
    }

    /// Whether a `watch` subscriber `peer` (subscribed for `filter`, nil: everyone it may see) sees an event of `user`.
    ///
    /// Events that concern no user (readers and cards) are seen by everyone.
    package static func sees(peer: Peer, filter: String?, eventUser: String?) -> Bool {
        guard let eventUser else { return true }
        if let filter, filter != eventUser { return false }
        if peer.isRoot { return true }
        return eventUser == peer.name
    }
}
