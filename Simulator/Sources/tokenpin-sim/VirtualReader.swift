import Foundation
import Synchronization
import TokenpinAPDU
import TokenpinArguments
import TokenpinSimulator
internal import TokenpinSystem

/// Exit codes; the same table is in Simulator/README.md.
enum ExitCode: Int32 {
    /// Stopped by SIGTERM or SIGINT.
    case success = 0
    /// The command line was invalid (2, as in tokenpin and tokenpind).
    case usage = 2
    /// The state file is corrupt or could not be written.
    case stateFile = 65
}

/// The command line, each option declared once: parsing and `--help` read these.
enum Arguments {
    static let state = Option.value(
        "--state", valueName: "file", isRequired: true,
        help: "The card's JSON state file; created factory-new when missing.")
    static let port = Option.value("--port", valueName: "n", help: "The vpcd port to connect to. (default: 35963)")
    static let host = Option.value("--host", valueName: "h", help: "The vpcd host. (default: localhost)")
    static let serial = Option.value(
        "--serial", valueName: "hex",
        help: "The card serial number, 8 hex digits (in the AID; a YubiKey shows it in decimal).")
    static let reset = Option.flag(
        "--reset", help: "Make the card factory-new (keeps the serial unless --serial is given).")
    static let fault = Option.value(
        "--fault", valueName: "rule", isRepeatable: true,
        help: "Inject a fault: KIND[:ARG][@INS][*TIMES] with KIND one of vanish,\n"
            + "vanish-after, delay:MS, late:MS, stall (no answer until pulled),\n"
            + "malformed:empty|oneByte|truncated|badTLV, sw:HEX4,\n"
            + "answer:HEX (data and status word, the card doing nothing).\n"
            + "Example: --fault sw:6A88@CA --fault vanish-after@20*1")
    static let reinsertAfter = Option.value(
        "--reinsert-after", valueName: "ms",
        help: "After a vanish fault, reinsert the card after this delay. (default: 1000)")
    static let stats = Option.flag(
        "--stats", help: "Print the time the card spends on each APDU to stderr, and a summary at exit.")
    static let trace = Option.flag(
        "--trace", help: "Print each APDU header and status word to stderr (never PIN data).")
    static let tap = Option.value(
        "--tap", valueName: "file",
        help: "Append each PSO:DECIPHER answer and each PIV GENERAL AUTHENTICATE answer\n"
            + "with a key slot (its 61xx parts joined; hex, with its status word) to the\n"
            + "file, as an eavesdropper on the reader's line sees it: for replay tests.")
    static let profile = Option.value(
        "--profile", valueName: "name", allowedValues: SimulatedProfile.names,
        help: "The card: openpgp (OpenPGP alone), piv-card (PIV alone), yubikey5 or yubikey\n"
            + "(both, the YubiKey PIV extensions, ATR and OpenPGP behaviour, and the management\n"
            + "and OTP applications ykman reads), nitrokey3\n"
            + "(OpenPGP, KDF-DO available, PINs kept across SELECT), gnuk (OpenPGP, cv25519,\n"
            + "short APDUs, 6-byte AID only). (default: openpgp)")
    static let help = Option.flag("-h", "--help", help: "Show help information.", stopsValidation: true)

    static let program = Program(
        "tokenpin-sim",
        overview: "A virtual OpenPGP card (spec 3.4) and/or PIV card (SP 800-73-4) in a vpcd virtual reader of pcscd.",
        discussion: "Starting it inserts the card, stopping it (SIGTERM, SIGINT) pulls it. It reconnects with backoff\n"
            + "while vpcd is not up. Every change to the card is written to the state file before the answer.",
        options: [state, port, host, serial, profile, reset, fault, reinsertAfter, stats, trace, tap, help])
}

/// The parsed command line.
struct Options {
    var statePath: String?
    var host = "localhost"
    var port: UInt16 = 35963
    var serial: UInt32?
    var reset = false
    var faults: [CardFaults.Rule] = []
    var stats = false
    var trace = false
    var tap: LineTap?
    var reinsertDelay: Duration = .seconds(1)
    var profile = SimulatedProfile.openpgp

    /// The options, or nil for `--help`. Usage errors are `ArgumentError`s from the parser or, for values it
    /// cannot judge, `SimulatorError(.invalidArgument)`.
    static func parse(_ arguments: [String]) throws -> Options? {
        let parsed = try Arguments.program.parse(arguments)
        if parsed.isSet(Arguments.help) { return nil }
        var options = Options()
        options.statePath = parsed.value(Arguments.state)
        if let host = parsed.value(Arguments.host) { options.host = host }
        if let text = parsed.value(Arguments.port) {
            guard let port = UInt16(text), port > 0 else {
                throw SimulatorError(.invalidArgument, "--port needs a number from 1 to 65535")
            }
            options.port = port
        }
        if let text = parsed.value(Arguments.serial) {
            guard text.count <= 8, let serial = UInt32(text, radix: 16) else {
                throw SimulatorError(.invalidArgument, "--serial needs up to 8 hex digits, not '\(text)'")
            }
            options.serial = serial
        }
        options.reset = parsed.isSet(Arguments.reset)
        options.faults = try parsed.values(Arguments.fault).map { try CardFaults.parseRule($0) }
        if let text = parsed.value(Arguments.reinsertAfter) {
            guard let milliseconds = Int(text), milliseconds >= 0 else {
                throw SimulatorError(.invalidArgument, "--reinsert-after needs milliseconds")
            }
            options.reinsertDelay = .milliseconds(milliseconds)
        }
        options.stats = parsed.isSet(Arguments.stats)
        options.trace = parsed.isSet(Arguments.trace)
        options.tap = parsed.value(Arguments.tap).map(LineTap.init(path:))
        if let name = parsed.value(Arguments.profile), let profile = SimulatedProfile(name: name) {
            options.profile = profile
        }
        return options
    }
}

/// Set by the SIGTERM/SIGINT handler; the loops check it after every interrupted system call.
let stopRequested = Atomic<Bool>(false)

func installSignalHandlers() {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { _ in stopRequested.store(true, ordering: .relaxed) }
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0  // no SA_RESTART: a blocking recv returns EINTR and the loop sees the flag
    sigaction(SIGTERM, &action, nil)
    sigaction(SIGINT, &action, nil)
    signal(SIGPIPE, SIG_IGN)
    // A parent may start us with these blocked (Foundation's Process inherits the spawning thread's mask);
    // a blocked SIGTERM would leave the card in the reader for ever.
    var unblock = sigset_t()
    sigemptyset(&unblock)
    sigaddset(&unblock, SIGTERM)
    sigaddset(&unblock, SIGINT)
    sigprocmask(SIG_UNBLOCK, &unblock, nil)
}

var isStopping: Bool { stopRequested.load(ordering: .relaxed) }

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Sleeps, waking early when a stop is requested.
func pause(_ duration: Duration) {
    guard !isStopping else { return }
    CurrentThread.sleep(for: duration, resumeAfterSignal: { !isStopping })
}

/// A TCP connection to vpcd.
final class VPCDSocket {
    private let socket: FileDescriptor

    /// Connects to `host:port`; nil when nothing listens there (yet).
    init?(host: String, port: UInt16) {
        guard let socket = try? FileDescriptor.tcpConnection(host: host, port: port) else { return nil }
        self.socket = socket
    }

    /// Reads exactly `count` bytes; nil at end of stream, on an error, or when a signal asked to stop.
    ///
    /// Not `FileDescriptor.read`, which retries every `EINTR`: here a signal must end the wait when it stops us.
    private func readExactly(_ count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            // vpcd writes the 2-byte length and the APDU in separate send() calls without TCP_NODELAY, so
            // its second write waits (Nagle) for our ACK of the first; a delayed ACK would add ~40 ms to
            // every APDU. TCP_QUICKACK is not sticky in Linux, so it is set before every read.
            try? socket.acknowledgeQuickly()
            let result = buffer[offset...].withUnsafeMutableBytes { part in
                Result { () throws(Errno) in try socket.receive(into: part) }
            }
            switch result {
            case .failure(.interrupted):
                if isStopping { return nil }
                continue
            case .success(let count) where count > 0: offset += count
            default: return nil
            }
        }
        return buffer
    }

    /// The next message from vpcd, or nil when the connection closed or a stop was requested.
    func receive() -> [UInt8]? {
        guard let header = readExactly(2) else { return nil }
        let length = Int(header[0]) << 8 | Int(header[1])
        return length == 0 ? [] : readExactly(length)
    }

    /// Sends one message; false when the connection is gone.
    func send(_ payload: [UInt8]) -> Bool {
        let message = [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
        return (try? socket.sendAll(message)) != nil
    }
}

/// Per-APDU processing times, for `--stats`.
struct Statistics {
    var microseconds: [Double] = []

    mutating func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        microseconds.append(Double(seconds) * 1e6 + Double(attoseconds) / 1e12)
    }

    var summary: String {
        guard !microseconds.isEmpty else { return "stats: no APDUs" }
        let sorted = microseconds.sorted()
        let median = sorted[sorted.count / 2]
        let p95 = sorted[min(sorted.count - 1, sorted.count * 95 / 100)]
        return String(
            format: "stats: apdus=%d card_median_us=%.1f card_p95_us=%.1f card_max_us=%.1f",
            sorted.count, median, p95, sorted.last ?? 0)
    }
}

/// Instructions whose data carries a PIN or a key: traces print only their header.
let sensitiveInstructions: Set<UInt8> = [
    CardInstruction.verify, CardInstruction.changeReferenceData,
    CardInstruction.resetRetryCounter, CardInstruction.putDataOdd,
    PIVInstruction.setManagementKey,
]

enum VPCDControl {
    static let powerOff: UInt8 = 0
    static let powerOn: UInt8 = 1
    static let reset: UInt8 = 2
    static let atr: UInt8 = 4
}

/// Serves one vpcd connection until it closes, the card vanishes or a stop is requested.
/// Returns true when the card vanished (fault injection).
func serve(_ socket: VPCDSocket, card: SimulatedCard, options: Options, statistics: inout Statistics) -> Bool {
    while !isStopping, let message = socket.receive() {
        if message.count == 1 {
            if options.trace { printError("vpcd control \(message[0])") }
            switch message[0] {
            case VPCDControl.powerOff: card.powerOff()
            case VPCDControl.powerOn: card.powerOn()
            case VPCDControl.reset: card.reset()
            case VPCDControl.atr: if !socket.send(card.atr) { return false }
            default: printError("tokenpin-sim: unknown vpcd control code \(message[0])")
            }
            continue
        }
        switch card.respond(to: message) {
        case .response(let bytes, let delay):
            if options.stats {
                statistics.record(card.lastProcessingTime)
            }
            if options.trace {
                let header = Hex.encode(message.prefix(4), separator: " ")
                let body = message.count > 1 && sensitiveInstructions.contains(message[1]) ? " [sensitive]" : ""
                printError(
                    "apdu \(header)\(body) -> \(Hex.encode(bytes.suffix(2))) (\(bytes.count) bytes, card \(card.lastProcessingTime))"
                )
            }
            options.tap?.record(message, bytes)
            if delay > .zero { pause(delay) }
            if !socket.send(bytes) { return false }
        case .removed:
            printError("tokenpin-sim: fault injection: card pulled")
            return true
        case .notPowered:
            // vpcd always powers the card before sending APDUs; answer nothing like a dead card.
            if !socket.send([]) { return false }
        case .stalled:
            // The connection stays open and silent: vpcd (and pcscd with it) waits for the answer until the card
            // is pulled (SIGTERM), as with a card that went quiet mid-command.
            printError("tokenpin-sim: fault injection: the card stalls")
            while !isStopping { pause(.seconds(1)) }
            return false
        }
    }
    return false
}

func run() -> Int32 {
    let options: Options
    do {
        guard let parsed = try Options.parse(Array(CommandLine.arguments.dropFirst())) else {
            print(Arguments.program.helpText(), terminator: "")
            return ExitCode.success.rawValue
        }
        options = parsed
    } catch {
        let message = (error as? ArgumentError)?.message ?? (error as? SimulatorError)?.detail ?? "\(error)"
        printError("error: \(message)\nhint: see tokenpin-sim --help")
        return ExitCode.usage.rawValue
    }
    let card: SimulatedCard
    do {
        card = try SimulatedCard(
            stateFile: options.statePath, serial: options.serial, reset: options.reset,
            profile: options.profile)
    } catch let error as SimulatorError {
        printError("error: \(error.detail)")
        return ExitCode.stateFile.rawValue
    } catch {
        printError("error: \(error)")
        return ExitCode.stateFile.rawValue
    }
    card.faults = CardFaults(rules: options.faults)
    installSignalHandlers()
    printError("tokenpin-sim: card \(String(format: "%08X", card.serial)) for vpcd at \(options.host):\(options.port)")
    var statistics = Statistics()
    var backoff: Duration = .milliseconds(100)
    while !isStopping {
        var vanished = false
        do {
            // The socket lives only in this scope: a vanished card must close it at once, or vpcd (and every
            // PC/SC client waiting on it) would wait for an answer until the card is reinserted.
            guard let socket = VPCDSocket(host: options.host, port: options.port) else {
                pause(backoff)
                backoff = min(backoff * 2, .seconds(2))
                continue
            }
            backoff = .milliseconds(100)
            card.insert()
            card.powerOn()
            printError("tokenpin-sim: inserted into vpcd at \(options.host):\(options.port)")
            vanished = serve(socket, card: card, options: options, statistics: &statistics)
        }
        if vanished {
            pause(options.reinsertDelay)
        } else if !isStopping {
            printError("tokenpin-sim: vpcd closed the connection; reconnecting")
            pause(backoff)
        }
    }
    if options.stats { printError(statistics.summary) }
    printError("tokenpin-sim: stopped, card pulled")
    return ExitCode.success.rawValue
}
