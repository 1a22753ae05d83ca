import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TokenpinCore
import TokenpinDaemon
import TokenpinReaders

// tokenpind: the tokenpin daemon. Runs in the foreground, logs to stderr (the journal under systemd).

let usage = """
    OVERVIEW: The tokenpin daemon: keeps PIN records root-owned and serves tokenpin, pam_tokenpin and watchers.

    USAGE: tokenpind [--socket PATH] [--state-dir DIR] [--config FILE] [--reader sim] [--debug] [--no-readers]

    OPTIONS:
      --socket PATH     The Unix socket to listen on (default /run/tokenpin/socket; ignored under socket activation).
      --state-dir DIR   Where records live (default /var/lib/tokenpin; created 0700).
      --config FILE     Read this configuration file instead of /etc/tokenpin/tokenpin.conf and conf.d/.
      --reader sim      Use the simulated card (state in DIR/sim-card.json) instead of PC/SC readers.
      --debug           Log requests at debug level (never a secret).
      --no-readers      Do not watch PC/SC readers and cards (no reader events for watchers).
      -h, --help        Show help information.
      --version         Show the version.

    SIGNALS: SIGTERM and SIGINT finish running operations and exit; SIGHUP reloads the configuration.

    """

func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data(("tokenpind: error: " + message + "\n").utf8))
    exit(code)
}

// No core files and not dumpable, before any secret or Argon2 memory exists.
if !CoreDumps.disable() { fail("cannot disable core dumps", code: 71) }
signal(SIGPIPE, SIG_IGN)

var options = DaemonOptions()
var simulatedCard = false
var level = Logger.Level.info
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    func value() -> String {
        guard let next = arguments.popFirst(), !next.isEmpty else { fail("\(argument) needs a value\n\n" + usage) }
        return next
    }
    switch argument {
    case "--socket": options.socketPath = value()
    case "--state-dir": options.stateDirectory = value()
    case "--config": options.configFile = value()
    case "--debug": level = .debug
    case "--no-readers": options.watchReaders = false
    case "--reader":
        guard value() == "sim" else { fail("--reader takes `sim`; choose PC/SC readers with the `reader` setting") }
        simulatedCard = true
    case "-h", "--help":
        print(usage, terminator: "")
        exit(0)
    case "--version":
        print("tokenpind \(tokenpinVersion) (protocol 1)")
        exit(0)
    default: fail("unknown option \(argument)\n\n" + usage)
    }
}

// Token operations: the PC/SC readers through pcscd, or the simulated card (which has no reader events).
if simulatedCard {
    options.cards = SimulatorCards.shared(stateFile: options.stateDirectory + "/sim-card.json")
    options.watchReaders = false
} else {
    options.cards = PCSCReaders()
}

let logger = Logger(label: "tokenpind", minimumLevel: level) { record in
    let line = Array((record.formatted + "\n").utf8)
    line.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
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
    for number in [SIGTERM, SIGINT, SIGHUP] { signal(number, SIG_IGN) }
    let queue = DispatchQueue(label: "tokenpind.signals")
    return [SIGTERM, SIGINT, SIGHUP].map { number in
        let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
        source.setEventHandler {
            if number == SIGHUP {
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

logger.info("started", [("state-dir", options.stateDirectory),
                        ("daemon-kdf-memory.mib", String(daemon.configuration.daemonKDFMemoryMiB))])
daemon.serve()
let finished = daemon.waitForOperations(seconds: 60)
logger.info("stopped", [("operations.unfinished", String(daemon.operationsInFlight))])
withExtendedLifetime(sources) {}
if !finished { exit(1) }
if daemon.boundSocketPath { unlink(options.socketPath) }  // systemd's socket stays with systemd
exit(0)
