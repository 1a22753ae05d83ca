internal import CTokenpinShims

#if canImport(Glibc)
    import Glibc
#endif

/// Who is at the other end of a connected Unix socket, as the kernel recorded it when the peer connected or made
/// the pair (`SO_PEERCRED`): not what the peer says of itself.
package struct PeerCredentials: Sendable, Equatable {
    /// The peer's process ID.
    package let processID: Int32
    /// The peer's effective user ID.
    package let userID: UInt32
    /// The peer's effective group ID.
    package let groupID: UInt32

    /// Credentials with these IDs.
    package init(processID: Int32, userID: UInt32, groupID: UInt32) {
        self.processID = processID
        self.userID = userID
        self.groupID = groupID
    }
}

extension FileDescriptor {
    /// The credentials of the peer of this connected Unix socket; a descriptor that is not a socket is
    /// `.notSocket`, a closed one `.badFileDescriptor`.
    ///
    /// The corresponding C function is `getsockopt(SO_PEERCRED)`.
    package func peerCredentials() throws(Errno) -> PeerCredentials {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        guard tokenpin_peer_credentials(rawValue, &pid, &uid, &gid) == 0 else { throw Errno.current }
        return PeerCredentials(processID: pid, userID: uid, groupID: gid)
    }
}
