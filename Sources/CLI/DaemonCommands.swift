import FoundationEssentials
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// `tokenpin import`: moves the local record into tokenpind's store (the daemon refuses to overwrite one).
struct ImportCommand: Command {
    func run(_ context: Context) -> ExitCode {
        guard let daemon = context.daemon else { return context.fail(context.noDaemon) }
        let path = context.store.recordPath(for: context.user)
        do {
            // The record's JSON (the current copy of a two-copy file), which tokenpind stores in its own format.
            guard try context.store.exists(), try context.store.load(user: context.user) != nil,
                let data = try context.store.recordJSON(user: context.user)
            else {
                if (try? daemon.perform(Operation.Types())) != nil {
                    return context.console.fail(
                        .usage, errorCode: "already-enrolled",
                        message: "the record of \(context.user) is already in tokenpind (imported or enrolled there); "
                            + "there is no local record at \(path) to import")
                }
                throw ServiceError.notEnrolled(user: context.user, path: path)
            }
            let remote = try daemon.importRecord([UInt8](data), context.interaction)
            // A copy left behind would be a second target for offline guessing: the record moves.
            try context.store.remove(user: context.user)
            context.console.say("Record moved to tokenpind: \(remote). The local copy \(path) was removed.")
            context.console.say(
                "The PIN may have been copied with the local file: set a fresh one that exists only "
                    + "in tokenpind with `tokenpin change`.")
            context.console.emit([
                ("ok", .bool(true)), ("event", .string("imported")), ("record", .string(remote)),
                ("removed", .string(path)), ("advice", .string("tokenpin change")),
            ])
            return .success
        } catch let error as ServiceError {
            return context.fail(error)
        } catch let error as StoreError {
            return context.fail(.store(error))
        } catch {
            return context.fail(.input("\(error)"))
        }
    }
}

/// `tokenpin watch`: tokenpind's events as JSON lines until interrupted.
struct WatchCommand: Command {
    func run(_ context: Context) -> ExitCode {
        guard let daemon = context.daemon else { return context.fail(context.noDaemon) }
        let quiet = context.console.quiet
        do {
            try daemon.watch { event in
                Console.write(1, Self.stamped(event, at: Date()) + "\n")
                return true
            } onSubscribed: { user in
                // On stderr, so stdout stays JSON lines; a script waits for it instead of sleeping.
                if !quiet { Console.write(2, Self.subscribed(user) + "\n") }
            }
        } catch {
            return context.fail(error)
        }
        // The handler never stops the stream: it ended because the daemon went away.
        return context.fail(
            .serviceUnavailable("tokenpind closed the connection (it stopped or restarted); no more events"))
    }

    /// The line that says the daemon confirmed the subscription: whose events follow (nil: every user's).
    static func subscribed(_ user: String?) -> String {
        "Watching tokenpind's events for " + (user ?? "every user") + "."
    }

    /// The event's JSON line with `time` (ISO 8601, UTC) after its name, unless the daemon already gave one.
    static func stamped(_ event: WatchedEvent, at date: Date) -> String {
        let line = event.jsonLine
        let head = "{\"event\":" + JSONValue.quote(event.name)
        guard line.hasPrefix(head), !event.fields.contains(where: { $0.key == "time" }) else { return line }
        let time = date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        return head + ",\"time\":" + JSONValue.quote(time) + line.dropFirst(head.count)
    }
}
