internal import TokenpinCore
internal import TokenpinService

// How the daemon's messages read and write: prompts, questions, choices, events, results, errors.

extension ServerMessage {
    /// Parses one line from the daemon.
    package static func parse(_ line: [UInt8]) throws(ProtocolError) -> ServerMessage {
        let value = try JSONParser.parse(line)
        guard let members = value.members else { throw ProtocolError(.malformed, "a message is a JSON object") }
        let fields = try MessageFields(members)
        let rest = members.filter { $0.key != "v" && $0.key != "type" }
        switch try fields.string("type") {
        case "prompt":
            return .prompt(
                name: try fields.string("prompt"), card: try fields.optionalString("card"),
                triesLeft: try fields.optionalInt("remaining", formerly: "triesLeft", in: ProtocolRanges.tries))
        case "question":
            return .question(try fields.string("text"), typed: try fields.optionalString("typed"))
        case "choice":
            guard case .array(let items) = fields["options"] ?? .null,
                (1...ProtocolLimits.maximumChoices).contains(items.count)
            else {
                throw ProtocolError(.badField, "`options` must be 1 to \(ProtocolLimits.maximumChoices) strings")
            }
            var options: [String] = []
            for item in items {
                guard let text = item.stringValue else { throw ProtocolError(.badField, "`options` must be strings") }
                options.append(text)
            }
            return .choice(try fields.string("text"), options: options)
        case "event":
            return .event(name: try fields.string("event"), fields: rest.filter { $0.key != "event" })
        case "result":
            return .result(
                exitCode: try fields.int("exitCode", in: ProtocolRanges.exitCode),
                fields: rest.filter { $0.key != "exitCode" })
        case "error":
            return .error(
                code: try fields.string("code"), message: try fields.string("message"),
                exitCode: try fields.int("exitCode", in: ProtocolRanges.exitCode),
                fields: rest.filter { !["code", "message", "exitCode"].contains($0.key) })
        case let other:
            throw ProtocolError(.unknownType, "unknown message type `\(other)`")
        }
    }
}

extension ServerMessage {
    /// The writer holding this message, for a reply that appends a secret member before finishing it.
    package var writer: LineWriter {
        var writer: LineWriter
        switch self {
        case .prompt(let name, let card, let triesLeft):
            writer = LineWriter("prompt")
            writer.append("prompt", .text(name))
            if let card { writer.append("card", .text(card)) }
            if let triesLeft { writer.append("remaining", .int(triesLeft)) }
        case .question(let text, let typed):
            writer = LineWriter("question")
            writer.append("text", .text(text))
            if let typed { writer.append("typed", .text(typed)) }
        case .choice(let text, let options):
            writer = LineWriter("choice")
            writer.append("text", .text(text))
            writer.append("options", .array(options.map(JSONValue.text)))
        case .event(let name, let fields):
            writer = LineWriter("event")
            writer.append("event", .text(name))
            writer.append(contentsOf: fields)
        case .result(let exitCode, let fields):
            writer = LineWriter("result")
            writer.append("exitCode", .int(exitCode))
            writer.append(contentsOf: fields)
        case .error(let code, let message, let exitCode, let fields):
            writer = LineWriter("error")
            writer.append("code", .text(code))
            writer.append("message", .text(message))
            writer.append("exitCode", .int(exitCode))
            writer.append(contentsOf: fields)
        }
        return writer
    }

    /// The line for this message, newline included.
    package var line: [UInt8] { writer.finish() }
}
