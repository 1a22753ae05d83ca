#if canImport(Glibc)
    import Glibc
#endif

/// The systemd journal's native protocol: one datagram per entry on the journal's socket, each field
/// `NAME=value` and a newline, or, for a value that holds a newline, `NAME`, a newline, the value's length as a
/// 64-bit little-endian number, the value and a newline (systemd's "Native Journal Protocol"; what
/// `sd_journal_sendv` writes for entries that fit in one datagram).
///
/// No libsystemd is needed, so the same code runs (and tests capture it with a socket of their own) where there
/// is none; `send` says when no journal listens, and the caller falls back to its stderr lines.
package struct JournalSocket: Sendable {
    /// Where journald listens.
    package static let defaultPath = "/run/systemd/journal/socket"
    /// The largest entry sent in one datagram (journald takes more through a memfd, which no entry here needs).
    package static let maximumEntry = 96 * 1024

    /// The socket's path.
    package let path: String

    /// The journal at `path`.
    package init(path: String = JournalSocket.defaultPath) {
        self.path = path
    }

    /// Whether `name` is a field name journald keeps: `A`-`Z`, `0`-`9` and `_`, at most 64, not starting with `_`
    /// (the fields journald adds itself) or a digit.
    package static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 64, first != UInt8(ascii: "_"), !(48...57).contains(first) else {
            return false
        }
        return bytes.allSatisfy { (65...90).contains($0) || (48...57).contains($0) || $0 == UInt8(ascii: "_") }
    }

    /// The datagram for `fields`; fields whose name journald would refuse are left out.
    package static func encode(_ fields: [(name: String, value: String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (name, value) in fields where isValidName(name) {
            let bytes = Array(value.utf8)
            out += Array(name.utf8)
            if bytes.contains(0x0A) {
                out.append(0x0A)
                var length = UInt64(bytes.count).littleEndian
                withUnsafeBytes(of: &length) { out += $0 }
            } else {
                out.append(UInt8(ascii: "="))
            }
            out += bytes
            out.append(0x0A)
        }
        return out
    }

    /// Sends one entry. Throws `.noSuchFileOrDirectory` or `.connectionRefused` when no journal listens, and
    /// `.fileTooLarge` for an entry larger than `maximumEntry`.
    ///
    /// The corresponding C functions are `socket(AF_UNIX, SOCK_DGRAM)` and `sendto`.
    package func send(_ fields: [(name: String, value: String)]) throws(Errno) {
        let datagram = Self.encode(fields)
        guard datagram.count <= Self.maximumEntry else { throw Errno.fileTooLarge }
        let address = try UnixSocketAddress(path: path)
        let socket = try FileDescriptor.unixDatagramSocket()
        try socket.sendDatagram(datagram, to: address)
    }
}

/// The journal's stream of a service's standard output and error (systemd's `StandardError=journal`).
package enum JournalStream {
    /// Whether `descriptor` (standard error unless told) is the journal's stream: systemd sets `JOURNAL_STREAM` to
    /// that stream's `DEVICE:INODE`, and the descriptor's device and inode must be those, so an inherited variable
    /// on a descriptor that was redirected since does not count. The journal stamps each line itself.
    ///
    /// `journalStream` is the variable's value (nil: unset); by default it is read with `getenv` alone, not
    /// `ProcessInfo.environment`, which builds a dictionary of the whole environment at the first log line. The
    /// corresponding C function is `fstat`.
    package static func isConnected(
        to descriptor: Int32 = 2, journalStream: String? = CurrentProcess.environmentValue("JOURNAL_STREAM")
    ) -> Bool {
        guard let journalStream else { return false }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        return journalStream == "\(info.st_dev):\(info.st_ino)"
    }
}
