import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

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

extension WatchCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "watch", group: CommandGroup.daemon, abstract: "Print tokenpind's events as JSON lines.",
        discussion: "Verified, wrong PIN, locked, reader and card events; a user sees their own, root everyone's.")

    static let traits: CommandTraits = [.readOnly]

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? { WatchCommand() }
}
