import Dispatch
import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinDaemon
import TokenpinReaders
import TokenpinSimulatedReaders
import TokenpinSystem

// tokenpind: the tokenpin daemon. Runs in the foreground, logs to stderr (the journal under systemd).

/// tokenpind's options, each declared once: parsing and `--help` read these.
enum Options {
    static let socket = Option.value(
        "--socket", valueName: "path",
        help: "The Unix socket to listen on (default /run/tokenpin/socket; ignored under socket activation).")
    static let stateDirectory = Option.value(
        "--state-dir", valueName: "dir", help: "Where records live (default /var/lib/tokenpin; created 0700).")
    static let config = Option.value(
        "--config", valueName: "file",
        help: "Read this configuration file instead of /etc/tokenpin/tokenpin.conf and conf.d/.")
    static let reader = Option.value(
        "--reader", valueName: "reader", allowedValues: ["sim"],
        help: "Use the simulated card (state in DIR/sim-card.json) instead of PC/SC readers;\n"
            + "choose PC/SC readers with the `reader` setting.")
    static let revokedDirectory = Option.value(
        "--revoked-dir", valueName: "dir",
        help: "Read the revoked cards from DIR instead of /etc/tokenpin/revoked.d (read again on SIGHUP).")
    static let journalSocket = Option.value(
        "--journal-socket", valueName: "path",
        help: "The journal's socket for the audit trail (default /run/systemd/journal/socket);\n"
            + "`none`: audit lines on stderr only.")
    static let debug = Option.flag("--debug", help: "Log requests at debug level (never a secret).")
    static let noReaders = Option.flag(
        "--no-readers", help: "Do not watch PC/SC readers and cards (no reader events for watchers).")
    static let help = Option.flag("-h", "--help", help: "Show help information.", stopsValidation: true)
    static let version = Option.flag("--version", help: "Show the version.", stopsValidation: true)

    static let program = Program(
        "tokenpind",
        overview: "The tokenpin daemon: keeps PIN records root-owned and serves tokenpin, pam_tokenpin and watchers.",
        options: [
            socket, stateDirectory, config, revokedDirectory, reader, journalSocket, debug, noReaders, help, version,
        ],
        sections: [
            HelpSection(
                "SIGNALS",
                text: "SIGTERM and SIGINT finish running operations and exit; "
                    + "SIGHUP reloads the configuration.")
        ])
}

func fail(_ message: String, code: Int32 = 2) -> Never {
    let line = Array(("tokenpind: error: " + message + "\n").utf8)
    FileDescriptor.withBorrowed(2) { try? $0.writeAll(line) }
    CurrentProcess.exit(code)
}

// No core files and not dumpable, before any secret or Argon2 memory exists.
if !CoreDumps.disable() { fail("cannot disable core dumps", code: 71) }
try? Signals.ignore(.brokenPipe)  // a write to a closed pipe or socket fails (EPIPE), not the process

let parsed: ParsedArguments
do {
    parsed = try Options.program.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    // Usage errors exit 2, as in tokenpin and tokenpin-sim.
    fail(error.message + "\nhint: usage: \(Options.program.usage()); see 'tokenpind --help'", code: 2)
}
if parsed.isSet(Options.help) {
    print(Options.program.helpText(), terminator: "")
    CurrentProcess.exit(0)
}
if parsed.isSet(Options.version) {
    print("tokenpind \(tokenpinVersion) (protocol \(Daemon.protocolVersion))")
    CurrentProcess.exit(0)
}
var options = DaemonOptions()
if let socket = parsed.value(Options.socket) { options.socketPath = socket }
if let directory = parsed.value(Options.stateDirectory) { options.stateDirectory = directory }
if let config = parsed.value(Options.config) { options.configFile = config }
if let directory = parsed.value(Options.revokedDirectory) { options.revokedDirectory = directory }
if let journal = parsed.value(Options.journalSocket) { options.journalSocket = journal == "none" ? nil : journal }
let level: Logger.Level = parsed.isSet(Options.debug) ? .debug : .info
let simulatedCard = parsed.value(Options.reader) == "sim"

// Token operations: the PC/SC readers through pcscd and their events, or the simulated card (which has no reader
// events).
if simulatedCard {
    do {
        let profile = try SimulatorCards.requestedProfile(environment: ProcessInfo.processInfo.environment)
        options.cards = SimulatorCards.shared(stateFile: options.stateDirectory + "/sim-card.json", profile: profile)
    } catch {
        fail(error.description, code: 78)
    }
} else {
    options.cards = PCSCReaders()
    if !parsed.isSet(Options.noReaders) { options.readerEvents = PCSCReaderEvents() }
}

// Where standard error is the journal's stream (systemd sets `JOURNAL_STREAM` to its device and inode), the journal
// stamps each line itself; anywhere else (a terminal, a file, a container's log) the line carries its own time. The
// check reads that one variable with `getenv`, not `ProcessInfo.environment`: that builds a dictionary of the whole
// environment, 1.4 million instructions at the first log line of a start (callgrind).
let stampsLines = !JournalStream.isConnected()
let logger = Logger(label: "tokenpind", minimumLevel: level) { record in
    let stamp = stampsLines ? Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)) + " " : ""
    let line = Array((stamp + record.formatted + "\n").utf8)
    FileDescriptor.withBorrowed(2) { try? $0.writeAll(line) }
}

let daemon: Daemon
do {
    daemon = try Daemon(options: options, logger: logger)
    try daemon.listen()
} catch {
    fail(error.description, code: 78)
}

/// Turns SIGTERM/SIGINT into a drain and SIGHUP into a reload, on a queue of their own.
///
/// A plain function, not top-level code: top-level closures would be main-actor isolated and the handlers run
/// on a dispatch queue.
func installSignalHandlers(daemon: Daemon, logger: Logger) -> [any DispatchSourceSignal] {
    let handled: [Signal] = [.terminate, .interrupt, .hangUp]
    for signal in handled { try? Signals.ignore(signal) }
    let queue = DispatchQueue(label: "tokenpind.signals")
    return handled.map { signal in
        let source = DispatchSource.makeSignalSource(signal: signal.rawValue, queue: queue)
        source.setEventHandler {
            if signal == .hangUp {
                daemon.reload()
            } else {
                logger.info("shutting down: finishing running operations")
                daemon.beginShutdown()
            }
        }
        source.resume()
        return source
    }
}

let sources = installSignalHandlers(daemon: daemon, logger: logger)

logger.info(
    "started",
    [
        ("state-dir", options.stateDirectory),
        ("daemon-kdf-memory.mib", String(daemon.configuration.daemon.kdfMemoryMiB)),
    ])
daemon.serve()
let finished = daemon.waitForOperations(seconds: 60)
logger.info("stopped", [("operations.unfinished", String(daemon.operationsInFlight))])
withExtendedLifetime(sources) {}
if !finished { CurrentProcess.exit(1) }
if daemon.boundSocketPath { try? Paths.removeFile(options.socketPath) }  // systemd's socket stays with systemd
CurrentProcess.exit(0)
