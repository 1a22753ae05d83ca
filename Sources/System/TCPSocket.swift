#if canImport(Glibc)
    import Glibc
#endif

/// One address a TCP host and port resolve to, as `getaddrinfo` gives it: what a client socket connects to.
package struct TCPAddress: Sendable {
    /// The address family (`AF_INET`, `AF_INET6`).
    package let family: Int32
    private let socketType: Int32
    private let protocolNumber: Int32
    private let storage: sockaddr_storage
    private let length: socklen_t

    /// The stream addresses of `host` and `port` (numeric or a name), in the order the resolver prefers.
    ///
    /// The corresponding C function is `getaddrinfo`.
    /// - Throws: `AddressLookupError` with the resolver's code (`EAI_NONAME` for a name that does not resolve).
    package static func lookUp(host: String, port: UInt16) throws(AddressLookupError) -> [TCPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else { throw AddressLookupError(code: status) }
        defer { freeaddrinfo(list) }
        var addresses: [TCPAddress] = []
        var entry = list
        while let current = entry?.pointee {
            if let address = current.ai_addr, Int(current.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size {
                var storage = sockaddr_storage()
                let bytes = UnsafeRawBufferPointer(start: address, count: Int(current.ai_addrlen))
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) }
                addresses.append(
                    TCPAddress(
                        family: current.ai_family, socketType: current.ai_socktype,
                        protocolNumber: current.ai_protocol, storage: storage, length: current.ai_addrlen))
            }
            entry = current.ai_next
        }
        return addresses
    }

    /// A new socket connected to this address (close-on-exec, blocking, `EINTR` not retried: a signal is
    /// `.interrupted`); nothing listening is `.connectionRefused`.
    ///
    /// The corresponding C functions are `socket` and `connect`.
    package func connect() throws(Errno) -> FileDescriptor {
        let raw = socket(family, socketType | Int32(SOCK_CLOEXEC.rawValue), protocolNumber)
        guard raw >= 0 else { throw Errno.current }
        let socket = FileDescriptor(owning: raw)  // closed when it goes away unconnected
        var address = storage
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(raw, $0, length) }
        }
        guard status == 0 else { throw Errno.current }
        return socket
    }
}

/// Why `getaddrinfo` found no address: its own code (`EAI_NONAME`, `EAI_AGAIN`…), not an `errno`.
package struct AddressLookupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `EAI_*` code.
    package let code: Int32

    /// Wraps an `EAI_*` code.
    package init(code: Int32) { self.code = code }

    /// `EAI_NONAME`: the name does not resolve (or a numeric address is malformed).
    package static let unknownName = AddressLookupError(code: EAI_NONAME)

    /// The resolver's message for the code.
    ///
    /// The corresponding C function is `gai_strerror`.
    package var description: String { String(cString: gai_strerror(code)) }
}

extension FileDescriptor {
    /// Connects a TCP socket to the first of `host`'s addresses that accepts (`TCP_NODELAY` set: each send goes
    /// out at once); when none does, the last address's error (`.connectionRefused` when nothing listens), and
    /// `.hostUnreachable` when the name resolves to nothing.
    ///
    /// The corresponding C functions are `getaddrinfo`, `socket`, `connect` and `setsockopt(TCP_NODELAY)`.
    package static func tcpConnection(host: String, port: UInt16) throws(Errno) -> FileDescriptor {
        guard let addresses = try? TCPAddress.lookUp(host: host, port: port), !addresses.isEmpty else {
            throw Errno.hostUnreachable
        }
        var lastError = Errno.hostUnreachable
        for address in addresses {
            do {
                let socket = try address.connect()
                try? socket.setTCPOption(TCP_NODELAY, true)
                return socket
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// Asks the kernel to acknowledge what arrives at once rather than delay the ACK (Linux's `TCP_QUICKACK`,
    /// which does not stay set: set it before each read that should not wait).
    ///
    /// The corresponding C function is `setsockopt(TCP_QUICKACK)`.
    package func acknowledgeQuickly() throws(Errno) {
        try setTCPOption(TCP_QUICKACK, true)
    }

    /// Sets or clears a Boolean `IPPROTO_TCP` option.
    ///
    /// The corresponding C function is `setsockopt(IPPROTO_TCP)`.
    func setTCPOption(_ option: Int32, _ on: Bool) throws(Errno) {
        var value: Int32 = on ? 1 : 0
        guard setsockopt(rawValue, Int32(IPPROTO_TCP), option, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw Errno.current
        }
    }
}
