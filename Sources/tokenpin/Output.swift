import FoundationEssentials
import TokenpinCore
import TokenpinService
#if canImport(Glibc)
import Glibc
#endif

/// A JSON value with keys in the order they were given, so output keys are stable.
indirect enum JSONValue {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([(String, JSONValue)])

    /// Compact JSON on one line.
    var serialized: String {
        switch self {
        case .string(let text): return Self.quote(text)
        case .int(let number): return String(number)
        case .double(let number): return number.isFinite ? fixed(number, 3) : "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return "null"
        case .array(let items): return "[" + items.map(\.serialized).joined(separator: ",") + "]"
        case .object(let pairs): return "{" + pairs.map { Self.quote($0.0) + ":" + $0.1.serialized }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += unicodeEscape(scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static func optional(_ value: Int?) -> JSONValue { value.map { .int($0) } ?? .null }
    static func optional(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
    static func optional(_ value: Date?) -> JSONValue {
        value.map { .string($0.formatted(.iso8601)) } ?? .null
    }
}

/// Where a command's output goes: human text on stdout, errors on stderr, or one JSON object.
struct Console {
    var json: Bool
    var quiet: Bool
    var out: Style
    var err: Style

    /// Writes a line to standard output (human mode, not quiet).
    func say(_ text: String) {
        guard !json, !quiet else { return }
        Self.write(1, text + "\n")
    }

    /// Writes a line to standard error (human mode).
    func note(_ text: String) {
        guard !json else { return }
        Self.write(2, text + "\n")
    }

    /// Prints the command's JSON object.
    func emit(_ object: [(String, JSONValue)]) {
        guard json else { return }
        Self.write(1, JSONValue.object(object).serialized + "\n")
    }

    /// Reports an error: `error: <message>` and a hint on stderr, or a JSON object with `error`.
    func fail(_ code: ExitCode, errorCode: String, message: String, hint: String? = nil,
              extra: [(String, JSONValue)] = []) -> ExitCode {
        if json {
            var object: [(String, JSONValue)] = [("ok", .bool(false))]
            object += extra
            object.append(("error", .object([("code", .string(errorCode)), ("message", .string(message)),
                                             ("exitCode", .int(Int(code.rawValue)))])))
            emit(object)
        } else {
            Self.write(2, err.error("error: ") + message + "\n")
            if let hint { Self.write(2, "hint: " + hint + "\n") }
        }
        return code
    }

    static func write(_ fd: Int32, _ text: String) {
        SlowStepNotice.shared.cancel()
        let bytes = Array(text.utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { break }
                offset += written
            }
        }
    }
}
