import Dispatch
import FoundationEssentials
import TokenpinCore
import TokenpinProtocol

// One connection: framing, limits, and `watch`; each request goes to `perform` (Dispatch.swift).
extension Daemon {
    /// Serves one connection: requests one after another, each answered with a `result` or an `error`.
    ///
    /// A malformed, oversized or half-finished request, a rate-limit breach or a silent peer gets an `error`
    /// and the connection closes; other clients are not affected.
    package func serveConnection(fd: Int32, peer: Peer) {
        let channel = LineChannel(fd: fd)
        let configuration = self.configuration
        var limiter = RateLimiter(limit: configuration.daemon.requestsPerMinute, windowNanoseconds: 60_000_000_000)
        let idle = Int32(clamping: min(configuration.daemon.idleTimeoutSeconds, 86_400) * 1000)
        while !isDraining {
            var line: [UInt8]
            do {
                line = try channel.readLine(timeoutMilliseconds: idle, deadline: { [self] in isDraining })
            } catch {
                if error.code != .closed && error.code != .busy {
                    logger.info(
                        "connection closed on a protocol error",
                        [("peer.uid", String(peer.uid)), ("error", error.code.rawValue)])
                    try? channel.send(error.message)
                }
                return
            }
            var message: ClientMessage
            do {
                message = try ClientMessage.parse(line)
                wipe(&line)
            } catch {
                wipe(&line)
                logger.info("malformed request", [("peer.uid", String(peer.uid)), ("error", error.code.rawValue)])
                try? channel.send(error.message)
                return
            }
            guard case .request(let request) = message else {
                if case .secret(_, var value) = message {
                    message = .cancel
                    wipe(&value)
                }
                try? channel.send(ProtocolError(.unexpected, "expected a request").message)
                return
            }
            guard limiter.allow(now: DispatchTime.now().uptimeNanoseconds) else {
                try? channel.send(ProtocolError(.rateLimited, "too many requests on this connection").message)
                return
            }
            if case .watch = request.operation {
                watch(channel: channel, peer: peer, request: request)
                return
            }
            guard perform(request, channel: channel, peer: peer) else { return }
        }
    }

    /// `watch`: registers the subscriber and holds the connection until the client closes it.
    func watch(channel: LineChannel, peer: Peer, request: Request) {
        let filter: String?
        switch Authorization.target(peer: peer, requested: request.user) {
        case .success(let user): filter = (peer.isRoot && request.user == nil) ? nil : user
        case .failure(let error):
            try? channel.send(error.protocolMessage)
            return
        }
        let id = hub.add(peer: peer, filter: filter, fd: channel.fd)
        defer { hub.remove(id) }
        try? channel.send(ServerMessage.result(exitCode: 0, fields: [JSONMember("watching", .text(filter ?? "*"))]))
        while !isDraining {
            do {
                var line = try channel.readLine(timeoutMilliseconds: -1, deadline: { [self] in isDraining })
                wipe(&line)
            } catch {
                return
            }
        }
    }
}
