#if canImport(Glibc)
    import Glibc
#endif

extension FileDescriptor {
    /// Whether the descriptor is closed when this process runs another program (`FD_CLOEXEC`).
    ///
    /// The corresponding C function is `fcntl(F_GETFD)`.
    package func isCloseOnExec() throws(Errno) -> Bool {
        let flags = fcntl(rawValue, F_GETFD)
        guard flags >= 0 else { throw Errno.current }
        return flags & FD_CLOEXEC != 0
    }

    /// Makes the descriptor close when this process runs another program, for one inherited without `FD_CLOEXEC`
    /// (a socket systemd passed); the descriptor's other flags are replaced, as there are no others.
    ///
    /// The corresponding C function is `fcntl(F_SETFD, FD_CLOEXEC)`.
    package func setCloseOnExec() throws(Errno) {
        guard fcntl(rawValue, F_SETFD, FD_CLOEXEC) == 0 else { throw Errno.current }
    }
}
