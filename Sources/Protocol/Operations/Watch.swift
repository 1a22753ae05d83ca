package import TokenpinCore
package import TokenpinService

extension Operation {
    /// Subscribe to events: the result confirms whose events follow, then events stream until the client leaves.
    package struct Watch: FieldlessOperation {
        static let name = "watch"
        static let lock = OperationLock.none
        /// Creates the operation.
        package init() {}
    }
}

extension DaemonClient {
    /// Streams events to `handler` until it returns false or the daemon closes; a user sees their own events,
    /// root sees everyone's.
    ///
    /// `onSubscribed` is called once, when the daemon confirms the subscription, with whose events it sends: a user
    /// name, or nil for every user (root without `user`). Every event after that point reaches `handler`, so a
    /// caller that waits for it misses none (an event from before it may arrive too, ahead of it).
    package func watch(
        _ handler: (WatchedEvent) -> Bool, onSubscribed: (_ user: String?) -> Void = { _ in }
    ) throws(ServiceError) {
        let channel = try connect()
        do {
            try channel.send(ClientMessage.request(Request(.watch(.init()), user: user)))
            var subscribed = false
            while true {
                let line = try channel.readLine(timeoutMilliseconds: -1)
                switch try ServerMessage.parse(line) {
                case .event(let name, let fields):
                    let event = WatchedEvent(
                        name: name, user: JSONValue.object(fields)["user"]?.stringValue,
                        fields: fields)
                    if !handler(event) { return }
                case .result(_, let fields) where !subscribed:
                    subscribed = true
                    let scope = JSONValue.object(fields)["watching"]?.stringValue
                    onSubscribed(scope == "*" ? nil : scope)
                case .error(let code, let message, _, let fields):
                    throw ServiceError(protocolCode: code, message: message, fields: fields)
                case .result, .prompt, .question, .choice:
                    continue
                }
            }
        } catch let error as ProtocolError {
            if error.code == .closed { return }
            throw .serviceUnavailable("tokenpind: \(error.detail)")
        } catch let error as ServiceError {
            throw error
        } catch {
            throw .serviceUnavailable("tokenpind: \(error)")
        }
    }
}

/// A service event or a reader/card event, as `watch` streams them.
package struct WatchedEvent: Sendable, Equatable {
    /// The event name (`verified`, `wrongPIN`, `locked`, `readerAdded`, ...).
    package var name: String
    /// The user it concerns, when it concerns one.
    package var user: String?
    /// All fields of the message (`event` excluded).
    package var fields: [JSONMember]
    /// The service event, when it is one.
    package var event: Event? { Event(name: name, fields: fields) }
    /// The JSON line the CLI prints for it (no newline).
    package var jsonLine: String {
        String(decoding: JSONValue.object([JSONMember("event", .text(name))] + fields).serialized, as: UTF8.self)
    }
}
