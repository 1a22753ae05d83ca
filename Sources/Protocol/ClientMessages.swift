internal import TokenpinCore
internal import TokenpinService

// How a client's messages read and write: the request and its operation's fields, secrets, answers.

// MARK: Decoding

extension ClientMessage {
    /// Parses one line from a client, strictly: known types, known fields, right types.
    package static func parse(_ line: [UInt8]) throws(ProtocolError) -> ClientMessage {
        let value = try JSONParser.parse(line)
        guard let members = value.members else { throw ProtocolError(.malformed, "a message is a JSON object") }
        let fields = try MessageFields(members)
        let type = try fields.string("type")
        switch type {
        case "request":
            return .request(try parseRequest(fields))
        case "secret":
            try fields.allow(["v", "type", "prompt", "value"])
            let prompt = try fields.string("prompt")
            guard case .string(let bytes) = fields["value"] else {
                throw ProtocolError(fields["value"] == nil ? .missingField : .badField, "`value` must be a string")
            }
            return .secret(prompt: prompt, value: bytes)
        case "confirm":
            try fields.allow(["v", "type", "answer"])
            return .confirm(try fields.bool("answer"))
        case "choice":
            try fields.allow(["v", "type", "index"])
            return .choice(try fields.int("index", in: 0...(ProtocolLimits.maximumChoices - 1)))
        case "cancel":
            try fields.allow(["v", "type"])
            return .cancel
        default:
            throw ProtocolError(.unknownType, "unknown message type `\(type)`")
        }
    }

    /// A request's fields: the ones every operation takes, then its own (its `WireOperation` reads them).
    static func parseRequest(_ fields: MessageFields) throws(ProtocolError) -> Request {
        var common = Request.commonFieldNames
        let version = fields["v"]?.intValue ?? 0
        if version >= ProtocolLimits.invokerVersion { common.formUnion(Invoker.fieldNames) }
        try fields.allow(common.union(Operation.ownFieldNames))
        let opName = try fields.string("op")
        guard let entry = Operation.byName[opName] else {
            throw ProtocolError(.unknownType, "unknown operation `\(opName)`")
        }
        try fields.allow(common.union(entry.type.fieldNames))
        var request = Request(try entry.read(fields))
        if let user = try fields.optionalString("user") {
            guard RecordStore.validate(user: user) else {
                throw ProtocolError(.badField, "`user` is not a user name")
            }
            request.user = user
        }
        request.newPINAttempts = try fields.optionalInt("newPINAttempts", in: 1...5)
        request.reader = try fields.optionalString("reader")
        request.pinpad = try fields.optionalBool("pinpad")
        request.serial = try fields.optionalString("serial")
        for text in [request.reader, request.serial].compactMap({ $0 }) where text.isEmpty || text.utf8.count > 256 {
            throw ProtocolError(.badField, "`reader` and `serial` must be 1 to 256 bytes")
        }
        if let name = try fields.optionalString("app") {
            guard let kind = TokenApplicationKind(rawValue: name) else {
                throw ProtocolError(.badField, "`app` must be openpgp, piv or pkcs11")
            }
            request.application = kind
        }
        if let uri = try fields.optionalString("tokenURI") {
            guard uri.hasPrefix("pkcs11:"), uri.utf8.count <= 1024 else {
                throw ProtocolError(.badField, "`tokenURI` must be a pkcs11: URI of at most 1024 bytes")
            }
            request.tokenURI = uri
        }
        if version >= ProtocolLimits.invokerVersion { request.invoker = try Self.invoker(fields) }
        return request
    }

    /// The invoker fields of a version 3 request, or nil when `invokerUID` is absent (the other fields need it).
    static func invoker(_ fields: MessageFields) throws(ProtocolError) -> Invoker? {
        guard let uid = try fields.optionalInt("invokerUID", in: 0...Int(UInt32.max)) else {
            if let stray = Invoker.fieldNames.first(where: { fields[$0] != nil }) {
                throw ProtocolError(.missingField, "`\(stray)` needs `invokerUID`")
            }
            return nil
        }
        var invoker = Invoker(uid: UInt32(uid))
        var texts: [String?] = []
        for key in ["service", "rhost", "tty", "ruser"] {
            let text = try fields.optionalString(key)
            if let text, text.utf8.count > ProtocolLimits.maximumInvokerText {
                throw ProtocolError(.badField, "`\(key)` is longer than \(ProtocolLimits.maximumInvokerText) bytes")
            }
            texts.append(text)
        }
        (invoker.service, invoker.rhost, invoker.tty, invoker.ruser) = (texts[0], texts[1], texts[2], texts[3])
        return invoker
    }
}

// MARK: Encoding

extension ClientMessage {
    /// The line for this message, newline included. A `secret` line holds the secret: wipe it after writing.
    package var line: [UInt8] {
        if case .secret(let prompt, let value) = self { return Self.secretLine(prompt: prompt, value: value) }
        var writer: LineWriter
        switch self {
        case .request(let request):
            writer = LineWriter("request")
            writer.append("op", .text(request.operation.name))
            if let user = request.user { writer.append("user", .text(user)) }
            if let attempts = request.newPINAttempts { writer.append("newPINAttempts", .int(attempts)) }
            request.operation.values.encode(into: &writer)
            if let reader = request.reader { writer.append("reader", .text(reader)) }
            if let serial = request.serial { writer.append("serial", .text(serial)) }
            if let kind = request.application { writer.append("app", .text(kind.rawValue)) }
            if let uri = request.tokenURI { writer.append("tokenURI", .text(uri)) }
            if let pinpad = request.pinpad { writer.append("pinpad", .bool(pinpad)) }
            if let invoker = request.invoker {
                writer.append("invokerUID", .int(Int(invoker.uid)))
                for (key, value) in [
                    ("service", invoker.service), ("rhost", invoker.rhost), ("tty", invoker.tty),
                    ("ruser", invoker.ruser),
                ] {
                    if let value { writer.append(key, .text(value)) }
                }
            }
        case .secret:
            preconditionFailure("a secret line is built by secretLine")
        case .confirm(let answer):
            writer = LineWriter("confirm")
            writer.append("answer", .bool(answer))
        case .choice(let index):
            writer = LineWriter("choice")
            writer.append("index", .int(index))
        case .cancel:
            writer = LineWriter("cancel")
        }
        return writer.finish()
    }
}

extension ClientMessage {
    /// The writer of a `secret` message for `prompt`, up to its `value`, its buffer reserved for the worst case
    /// of a `count`-byte secret (every byte escaped), so no reallocation leaves a copy of the secret behind.
    static func secretWriter(prompt: String, count: Int) -> LineWriter {
        var writer = LineWriter("secret", reserving: prompt.utf8.count * 6 + count * 6)
        writer.append("prompt", .text(prompt))
        return writer
    }

    /// The line of a `secret` message, newline included. Wipe it after writing.
    static func secretLine(prompt: String, value: [UInt8]) -> [UInt8] {
        var writer = secretWriter(prompt: prompt, count: value.count)
        value.withUnsafeBytes { writer.appendSecret("value", bytes: $0) }
        return writer.finish()
    }
}
