import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TokenpinCore
import TokenpinProtocol
import TokenpinService

// tokenpin-daemon-client: drives tokenpind through DaemonClient for the end-to-end tests, the way the CLI will.
// Answers prompts from standard input lines (as --pin-stdin), prints one JSON line, exits with the CLI's code.
//
//   tokenpin-daemon-client --socket PATH [--user NAME] OP [ARG]
//   OP: ping | enrol | verify | change | reset | status | types | toggle-pin-off | import FILE | watch COUNT

var arguments = Array(CommandLine.arguments.dropFirst())
var client = DaemonClient()
var operation: String?
var argument: String?
while !arguments.isEmpty {
    let next = arguments.removeFirst()
    switch next {
    case "--socket": client.socketPath = arguments.isEmpty ? "" : arguments.removeFirst()
    case "--user": client.user = arguments.isEmpty ? nil : arguments.removeFirst()
    default:
        if operation == nil { operation = next } else { argument = next }
    }
}

/// Writes a line to standard output, unbuffered (watchers are read line by line).
func writeLine(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    bytes.withUnsafeBytes { _ = write(1, $0.baseAddress, $0.count) }
}

func readAnswers() -> [String] {
    var lines: [String] = []
    while let line = readLine(strippingNewline: true) { lines.append(line) }
    return lines
}

func emit(_ members: [JSONMember], code: ExitCode) -> Never {
    let line = JSONValue.object(members + [JSONMember("exitCode", .int(Int(code.rawValue)))]).serialized
    writeLine(String(decoding: line, as: UTF8.self))
    exit(code.rawValue)
}

func fail(_ error: ServiceError) -> Never {
    emit([JSONMember("ok", .bool(false)), JSONMember("code", .text(error.code)),
          JSONMember("message", .text(error.message))], code: ExitCode(error))
}

func finish(_ report: VerifyReport) -> Never {
    emit([JSONMember("ok", .bool(report.exitCode == .success))] + report.protocolFields, code: report.exitCode)
}

do {
    switch operation ?? "" {
    case "ping":
        emit([JSONMember("ok", .bool(true)), JSONMember("version", .int(try client.ping()))], code: .success)
    case "enrol":
        let result = try client.enrol(ScriptedInteraction(readAnswers()))
        let key = result.recoveryKeyText.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        emit([JSONMember("ok", .bool(true)), JSONMember("record", .text(result.recordPath)),
              JSONMember("recoveryKey", .text(key))], code: .success)
    case "verify": finish(try client.verify(ScriptedInteraction(readAnswers())))
    case "change": finish(try client.change(ScriptedInteraction(readAnswers())))
    case "reset": finish(try client.reset(ScriptedInteraction(readAnswers())))
    case "status":
        let status = try client.status()
        emit([JSONMember("ok", .bool(true)), JSONMember("status", status.protocolValue)], code: .success)
    case "types":
        let types = try client.types()
        emit([JSONMember("ok", .bool(true)), JSONMember("types", TypeStatus.protocolValue(types))], code: .success)
    case "toggle-pin-off":
        try client.toggle(.pin, on: false, ScriptedInteraction([]))
        emit([JSONMember("ok", .bool(true))], code: .success)
    case "import":
        guard let file = argument, let data = FileManager.default.contents(atPath: file) else {
            fail(.input("import needs a readable record file"))
        }
        let path = try client.importRecord([UInt8](data), ScriptedInteraction(readAnswers()))
        emit([JSONMember("ok", .bool(true)), JSONMember("record", .text(path))], code: .success)
    case "watch":
        var remaining = Int(argument ?? "1") ?? 1
        try client.watch { event in
            writeLine(event.jsonLine)
            remaining -= 1
            return remaining > 0
        }
        exit(0)
    default:
        FileHandle.standardError.write(Data("usage: tokenpin-daemon-client --socket PATH [--user NAME] OP [ARG]\n".utf8))
        exit(ExitCode.usage.rawValue)
    }
} catch {
    fail(error)
}
