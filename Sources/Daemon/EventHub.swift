import Synchronization
import TokenpinCore
import TokenpinProtocol
internal import TokenpinSystem

/// The `watch` subscribers and the fan-out of events to them.
///
/// A subscriber sees the events of its own user; root sees everyone's. Writes never block: they use
/// `MSG_DONTWAIT`, and a subscriber whose socket is full or gone is dropped (its reader then ends).
package final class EventHub: Sendable {
    struct Subscriber: Sendable {
        var peer: Peer
        var filter: String?
        var fd: Int32
    }

    private let subscribers = Mutex<(next: Int, all: [Int: Subscriber])>((0, [:]))

    /// Creates an empty hub.
    package init() {}

    /// Adds a subscriber writing to `fd`; returns its id.
    func add(peer: Peer, filter: String?, fd: Int32) -> Int {
        subscribers.withLock { state in
            state.next += 1
            state.all[state.next] = Subscriber(peer: peer, filter: filter, fd: fd)
            return state.next
        }
    }

    /// Removes a subscriber; after this returns the hub never writes to its descriptor again.
    func remove(_ id: Int) {
        _ = subscribers.withLock { $0.all.removeValue(forKey: id) }
    }

    /// The number of subscribers.
    package var count: Int { subscribers.withLock { $0.all.count } }

    /// Sends an event about `user` (nil: not about a user) to every subscriber allowed to see it.
    package func publish(user: String?, name: String, fields: [JSONMember]) {
        var all = fields
        if let user { all.insert(JSONMember("user", .text(user)), at: 0) }
        let line = ServerMessage.event(name: name, fields: all).line
        subscribers.withLock { state in
            // The writes happen under the lock so that `remove` cannot race a write to a closed descriptor;
            // they never block (MSG_DONTWAIT), so the lock is held only briefly.
            for (id, subscriber) in state.all
            where Authorization.sees(peer: subscriber.peer, filter: subscriber.filter, eventUser: user) {
                FileDescriptor.withBorrowed(subscriber.fd) { socket in
                    guard (try? socket.sendAllWithoutWaiting(line)) == nil else { return }
                    state.all.removeValue(forKey: id)
                    try? socket.shutdown()
                }
            }
        }
    }
}
