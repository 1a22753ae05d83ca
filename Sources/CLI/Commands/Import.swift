import FoundationEssentials
import TokenpinArguments
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

extension ImportCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "import", group: CommandGroup.pinAndRecord, abstract: "Move the local record into tokenpind's store.",
        discussion: "The daemon refuses to overwrite a record it has; the local copy is removed after the move.")

    static let traits: CommandTraits = [.bothSides]

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? { ImportCommand() }
}
