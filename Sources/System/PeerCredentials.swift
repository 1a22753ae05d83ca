internal import CTokenpinShims

#if canImport(Glibc)
    import Glibc
#endif

/// The process at the other end of a connected Unix socket, as the kernel recorded it when the connection was made.
package struct PeerCredentials: Sendable, Equatable {
    /// The peer's process ID.
    package let processID: Int32
    /// The peer's (effective) user ID.
    package let userID: UInt32
    /// The peer's (effective) group ID.
    package let groupID: UInt32

    /// Credentials with these IDs.
    package init(processID: Int32, userID: UInt32, groupID: UInt32) {
        self.processID = processID
        self.userID = userID
        self.groupID = groupID
    }
}

extension FileDescriptor {
    /// The credentials of this connected Unix socket's peer; a descriptor that is not a socket is `ENOTSOCK`.
    ///
    /// The kernel's record (`struct ucred`, which Glibc hides, read by the C shim), not anything the peer sent. The
    /// corresponding C function is `getsockopt(SO_PEERCRED)`.
    package func peerCredentials() throws(Errno) -> PeerCredentials {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        guard tokenpin_peer_credentials(rawValue, &pid, &uid, &gid) == 0 else { throw Errno.current }
        return PeerCredentials(processID: pid, userID: uid, groupID: gid)
    }
}
