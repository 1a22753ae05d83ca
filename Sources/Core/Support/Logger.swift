import Synchronization

/// A small structured logger: constant message text, data in keys, a sink chosen by the executable.
///
/// Libraries log at `debug` or below; only executables decide what reaches the user. No secret is ever
/// passed as a value: `SecretBytes` and `PIN` are non-copyable and cannot be interpolated.
public struct Logger: Sendable {
    /// How much a message matters.
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        case trace, debug, info, warning, error

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }
    }

    /// One log record.
    public struct Record: Sendable {
        /// The level.
        public var level: Level
        /// The subsystem that logged (`store`, `service`, `pcsc`).
        public var label: String
        /// Constant message text.
        public var message: String
        /// Data, as key-value pairs (`pin.remaining`, `reader.name`).
        public var metadata: [(String, String)]

        /// One line of `key=value` text.
        public var formatted: String {
            var line = "\(level) \(label): \(message)"
            for (key, value) in metadata { line += " \(key)=\(value)" }
            return line
        }
    }

    /// Where records go.
    public typealias Sink = @Sendable (Record) -> Void

    /// The subsystem name.
    public var label: String
    /// The lowest level that reaches the sink.
    public var minimumLevel: Level
    private let sink: Sink

    /// Creates a logger that sends records at or above `minimumLevel` to `sink`.
    public init(label: String, minimumLevel: Level = .info, sink: @escaping Sink) {
        self.label = label
        self.minimumLevel = minimumLevel
        self.sink = sink
    }

    /// A logger that drops everything.
    public static let disabled = Logger(label: "", minimumLevel: .error, sink: { _ in })

    /// A copy with another label, sharing the sink.
    public func labelled(_ label: String) -> Logger {
        Logger(label: label, minimumLevel: minimumLevel, sink: sink)
    }

    /// Logs `message` with `metadata` at `level`.
    public func log(_ level: Level, _ message: StaticString, _ metadata: [(String, String)] = []) {
        guard level >= minimumLevel else { return }
        sink(Record(level: level, label: label, message: "\(message)", metadata: metadata))
    }

    /// Logs at trace level.
    public func trace(_ message: StaticString, _ metadata: [(String, String)] = []) { log(.trace, message, metadata) }
    /// Logs at debug level.
    public func debug(_ message: StaticString, _ metadata: [(String, String)] = []) { log(.debug, message, metadata) }
    /// Logs at info level.
    public func info(_ message: StaticString, _ metadata: [(String, String)] = []) { log(.info, message, metadata) }
    /// Logs at warning level.
    public func warning(_ message: StaticString, _ metadata: [(String, String)] = []) {
        log(.warning, message, metadata)
    }
    /// Logs at error level.
    public func error(_ message: StaticString, _ metadata: [(String, String)] = []) { log(.error, message, metadata) }
}

/// Collects records in memory; for tests that assert what was (and was not) logged.
public final class LogCapture: Sendable {
    private let records = Mutex<[Logger.Record]>([])

    /// Creates an empty capture.
    public init() {}

    /// A logger at `level` that appends to this capture.
    public func logger(label: String = "test", level: Logger.Level = .trace) -> Logger {
        Logger(label: label, minimumLevel: level) { [self] record in
            records.withLock { $0.append(record) }
        }
    }

    /// Every line captured so far.
    public var lines: [String] { records.withLock { $0.map(\.formatted) } }
}
