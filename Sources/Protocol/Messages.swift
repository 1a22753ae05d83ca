import TokenpinCore
public import TokenpinService

/// An operation a client asks for.
public enum Operation: String, Sendable, CaseIterable {
    /// Liveness check; answers the protocol version.
    case ping
    /// Enrol a PIN.
    case enrol
    /// Verify the PIN.
    case verify
    /// Change the PIN.
    case change
    /// Reset with the recovery key.
    case reset
    /// The record's state.
    case status
    /// The authentication types.
    case types
    /// Switch an authentication type on or off.
    case toggle
    /// Move a local record into the daemon's store.
    case `import`
    /// Subscribe to events.
    case watch
    /// The readers and the card in each.
    case readers
    /// Change the card's own PIN (PW1).
    case cardChangePIN = "card-change-pin"
    /// Unblock the card's PIN with the Reset Code, or the admin PIN (`admin`).
    case cardUnblock = "card-unblock"
    /// Remove the record, after a verification (or, for root with `admin`, without one).
    case unenrol
    /// Verify as `verify` does, then release the key of an application (`applicationName`).
    case derive
    /// Keep the login password sealed for the login keyring (the password stack; LoginKeyringMessages.swift).
    case sealLoginPassword = "seal-login-password"
}

/// A request: the first message of an exchange.
public struct Request: Sendable, Equatable {
    /// The operation.
    public var operation: Operation
    /// The user to act on; nil for the caller.
    public var user: String?
    /// `toggle`: the type.
    public var authenticationType: AuthenticationType?
    /// `toggle`: on or off.
    public var on: Bool?
    /// `import`: the record's bytes.
    public var record: [UInt8]?
    /// How many chances a refused new PIN gets (the client's `Interaction.newPINAttempts`, 1 to 5).
    public var newPINAttempts: Int?
    /// `verify`: the one authentication type to use (`pin` or `token`); `toggle token off`: the verification.
    public var method: VerificationMethod?
    /// `toggle token on`: create a cv25519 decryption key on the card with the admin PIN.
    public var generateKey: Bool?
    /// `toggle token on`: the key generation is confirmed in advance.
    public var assumeYes: Bool?
    /// `toggle token on`: the mode to bind in (`both` re-binds a card bound in `either`).
    public var mode: VerificationMode?
    /// `card-unblock`: with the admin PIN instead of the Reset Code. `reset` and `unenrol`: root acting as the
    /// administrator, without the user's secrets (a non-root peer is refused).
    public var admin: Bool?
    /// The reader to use (a name or a glob).
    public var reader: String?
    /// The card to use (its serial).
    public var serial: String?
    /// The token application to use (`openpgp`, `piv`).
    public var application: TokenApplicationKind?
    /// The RFC 7512 URI of the PKCS#11 key to use (`--token-uri`). The module is never the client's: tokenpind
    /// loads the one its own `pkcs11-module` names.
    public var tokenURI: String?
    /// `toggle token on`: the PIV slot holding the key to bind (`9d`, `82`...).
    public var slot: String?
    /// Who runs the PAM stack that sent the request (version 3); the daemon reads it only from root peers.
    public var invoker: Invoker?
    /// `derive`: the application whose key to release (`restic`, `ssh:work`).
    public var applicationName: ApplicationName?
    /// `false`: card PINs at the keyboard even where the reader has a keypad (`--no-pinpad`); a client can only turn
    /// the keypad off, never on where the daemon's `pinpad = off`.
    public var pinpad: Bool?
    /// `verify` from PAM: hand back the sealed login password after a success at the seat (`login-keyring`).
    public var loginKeyring: Bool?

    /// Creates a request.
    public init(
        _ operation: Operation, user: String? = nil, authenticationType: AuthenticationType? = nil,
        on: Bool? = nil, record: [UInt8]? = nil, newPINAttempts: Int? = nil
    ) {
        self.operation = operation
        self.newPINAttempts = newPINAttempts
        self.user = user
        self.authenticationType = authenticationType
        self.on = on
        self.record = record
    }
}

/// Who invoked a PAM stack, as the PAM module reports it in a request (protocol version 3): the real uid of the
/// process it runs in (`getuid()`), and the items `PAM_SERVICE`, `PAM_RHOST`, `PAM_TTY`, `PAM_RUSER`.
///
/// The daemon trusts these only from a root peer (the module runs inside login, su, sshd, sudo); a peer that is not
/// root is always the user themselves.
public struct Invoker: Sendable, Equatable {
    /// The invoking real uid.
    public var uid: UInt32
    /// `PAM_SERVICE` (`su`, `sshd`, `sudo`, `login`).
    public var service: String?
    /// `PAM_RHOST`: set by sshd (and other remote logins).
    public var rhost: String?
    /// `PAM_TTY`.
    public var tty: String?
    /// `PAM_RUSER`: the requesting user, as the application says.
    public var ruser: String?

    /// Creates an invoker.
    public init(uid: UInt32, service: String? = nil, rhost: String? = nil, tty: String? = nil, ruser: String? = nil) {
        self.uid = uid
        self.service = service
        self.rhost = rhost
        self.tty = tty
        self.ruser = ruser
    }

    /// The wire names of the invoker fields.
    static let fieldNames: Set<String> = ["invokerUID", "service", "rhost", "tty", "ruser"]
}

/// What a client sends.
public enum ClientMessage: Sendable, Equatable {
    /// Start an operation.
    case request(Request)
    /// The answer to a `prompt`; the bytes are a secret and are wiped by whoever consumes them.
    case secret(prompt: String, value: [UInt8])
    /// The answer to a `question`.
    case confirm(Bool)
    /// The answer to a `choice`: the index of the option chosen.
    case choice(Int)
    /// Stop the operation at the current prompt.
    case cancel
}

/// What the daemon sends.
public enum ServerMessage: Sendable, Equatable {
    /// Asks for a secret; `card` and `triesLeft` for card prompts.
    case prompt(name: String, card: String?, triesLeft: Int?)
    /// Asks a yes/no question; with `typed`, the answer is yes only when the person typed that word (a key
    /// about to be replaced on a card).
    case question(String, typed: String? = nil)
    /// Asks the person to pick one of `options` (several cards and none named): the client lists them and answers
    /// with the index, as local mode asks on the terminal; a client that cannot ask answers `cancel`.
    case choice(String, options: [String])
    /// Something happened (flat fields: `event` plus data).
    case event(name: String, fields: [JSONMember])
    /// The final answer: `exitCode` from the exit-code table plus the operation's fields.
    case result(exitCode: Int, fields: [JSONMember])
    /// The final answer of a failed operation or a broken request.
    case error(code: String, message: String, exitCode: Int, fields: [JSONMember])
}

// MARK: Decoding

extension ClientMessage {
    /// Parses one line from a client, strictly: known types, known fields, right types.
    public static func parse(_ line: [UInt8]) throws(ProtocolError) -> ClientMessage {
        let value = try JSONParser.parse(line)
        guard let members = value.members else { throw ProtocolError(.malformed, "a message is a JSON object") }
        let fields = try MessageFields(members)
        let type = try fields.string("type")
        switch type {
        case "request":
            var common: Set<String> = [
                "v", "type", "op", "user", "newPINAttempts", "reader", "serial", "app", "tokenURI", "pinpad",
            ]
            let version = fields["v"]?.intValue ?? 0
            if version >= ProtocolLimits.invokerVersion { common.formUnion(Invoker.fieldNames) }
            try fields.allow(
                common.union([
                    "authType", "on", "record", "method", "generateKey", "yes", "admin", "mode", "slot",
                    "applicationName", "loginKeyring",
                ]))
            let opName = try fields.string("op")
            guard let operation = Operation(rawValue: opName) else {
                throw ProtocolError(.unknownType, "unknown operation `\(opName)`")
            }
            var request = Request(operation)
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
            for text in [request.reader, request.serial].compactMap({ $0 }) where text.isEmpty || text.utf8.count > 256
            {
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
            switch operation {
            case .toggle:
                let name = try fields.string("authType")
                guard let type = AuthenticationType(rawValue: name) else {
                    throw ProtocolError(.badField, "`authType` must be pin or token")
                }
                request.authenticationType = type
                request.on = try fields.bool("on")
                try fields.allow(common.union(["authType", "on", "generateKey", "yes", "method", "mode", "slot"]))
                if let slot = try fields.optionalString("slot") {
                    guard (1...8).contains(slot.utf8.count) else {
                        throw ProtocolError(.badField, "`slot` must be 1 to 8 bytes")
                    }
                    request.slot = slot
                }
                if let name = try fields.optionalString("mode") {
                    guard let mode = VerificationMode(rawValue: name) else {
                        throw ProtocolError(.badField, "`mode` must be either or both")
                    }
                    request.mode = mode
                }
                request.generateKey = try fields.optionalBool("generateKey")
                request.assumeYes = try fields.optionalBool("yes")
                request.method = try Self.method(fields)
            case .verify:
                try fields.allow(common.union(["method", "loginKeyring"]))
                request.method = try Self.method(fields)
                request.loginKeyring = try fields.optionalBool("loginKeyring")
            case .derive:
                try fields.allow(common.union(["method", "applicationName"]))
                request.method = try Self.method(fields)
                guard let name = ApplicationName(try fields.string("applicationName")) else {
                    throw ProtocolError(.badField, "`applicationName` must be \(ApplicationName.shape)")
                }
                request.applicationName = name
            case .cardUnblock, .reset:
                try fields.allow(common.union(["admin"]))
                request.admin = try fields.optionalBool("admin")
            case .unenrol:
                try fields.allow(common.union(["admin", "method"]))
                request.admin = try fields.optionalBool("admin")
                request.method = try Self.method(fields)
            case .import:
                let text = try fields.string("record")
                guard let data = Base64.decode(text), !data.isEmpty else {
                    throw ProtocolError(.badField, "`record` must be base64")
                }
                guard data.count <= ProtocolLimits.maximumImportBytes else {
                    throw ProtocolError(
                        .oversized, "the record is larger than \(ProtocolLimits.maximumImportBytes) bytes")
                }
                request.record = data
            default:
                try fields.allow(common)
            }
            return .request(request)
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

    /// The optional `method` field of `verify` and `toggle`: `pin` or `token`.
    static func method(_ fields: MessageFields) throws(ProtocolError) -> VerificationMethod? {
        guard let name = try fields.optionalString("method") else { return nil }
        guard name == "pin" || name == "token", let method = VerificationMethod(rawValue: name) else {
            throw ProtocolError(.badField, "`method` must be pin or token")
        }
        return method
    }
}

extension ServerMessage {
    /// Parses one line from the daemon.
    public static func parse(_ line: [UInt8]) throws(ProtocolError) -> ServerMessage {
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

/// Typed access to a message's fields, checking the version.
struct MessageFields {
    let members: [JSONMember]

    init(_ members: [JSONMember]) throws(ProtocolError) {
        self.members = members
        guard let version = members.first(where: { $0.key == "v" })?.value else {
            throw ProtocolError(.missingField, "`v` is missing")
        }
        guard let number = version.intValue, ProtocolLimits.acceptedVersions.contains(number) else {
            throw ProtocolError(
                .unsupportedVersion,
                "this build speaks protocol versions "
                    + "\(ProtocolLimits.acceptedVersions.lowerBound)–\(ProtocolLimits.version)")
        }
    }

    subscript(key: String) -> JSONValue? { members.first { $0.key == key }?.value }

    func allow(_ keys: Set<String>) throws(ProtocolError) {
        if let extra = members.first(where: { !keys.contains($0.key) }) {
            throw ProtocolError(.unknownField, "unknown field `\(extra.key)`")
        }
    }

    func string(_ key: String) throws(ProtocolError) -> String {
        guard let value = self[key] else { throw ProtocolError(.missingField, "`\(key)` is missing") }
        guard let text = value.stringValue else { throw ProtocolError(.badField, "`\(key)` must be a string") }
        return text
    }

    func optionalString(_ key: String) throws(ProtocolError) -> String? {
        guard let value = self[key], value != .null else { return nil }
        guard let text = value.stringValue else { throw ProtocolError(.badField, "`\(key)` must be a string") }
        return text
    }

    /// The whole number at `key`, checked against `range` before anyone uses it.
    func int(_ key: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int {
        guard self[key] != nil else { throw ProtocolError(.missingField, "`\(key)` is missing") }
        guard let number = try optionalInt(key, in: range) else {
            throw ProtocolError(.badField, "`\(key)` must be a whole number")
        }
        return number
    }

    /// The whole number at `key` in `range`, or nil when absent or null; `bad-field` naming the key otherwise.
    func optionalInt(_ key: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int? {
        try JSONValue.object(members).number(key, in: range)
    }

    /// `optionalInt(key, in:)`, falling back to the name protocol version 1 gave the field.
    func optionalInt(_ key: String, formerly oldKey: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int? {
        try JSONValue.object(members).number(key, formerly: oldKey, in: range)
    }

    func optionalBool(_ key: String) throws(ProtocolError) -> Bool? {
        guard let value = self[key] else { return nil }
        guard let flag = value.boolValue else { throw ProtocolError(.badField, "`\(key)` must be true or false") }
        return flag
    }

    func bool(_ key: String) throws(ProtocolError) -> Bool {
        guard let value = self[key] else { throw ProtocolError(.missingField, "`\(key)` is missing") }
        guard let flag = value.boolValue else { throw ProtocolError(.badField, "`\(key)` must be true or false") }
        return flag
    }
}

// MARK: Encoding

extension ClientMessage {
    /// The line for this message, newline included. A `secret` line holds the secret: wipe it after writing.
    public var line: [UInt8] {
        if case .secret(let prompt, let value) = self { return Self.secretLine(prompt: prompt, value: value) }
        var writer: LineWriter
        switch self {
        case .request(let request):
            writer = LineWriter("request")
            writer.append("op", .text(request.operation.rawValue))
            if let user = request.user { writer.append("user", .text(user)) }
            if let type = request.authenticationType { writer.append("authType", .text(type.rawValue)) }
            if let on = request.on { writer.append("on", .bool(on)) }
            if let record = request.record { writer.append("record", .text(Base64.encode(record))) }
            if let attempts = request.newPINAttempts { writer.append("newPINAttempts", .int(attempts)) }
            if let method = request.method { writer.append("method", .text(method.rawValue)) }
            if let generate = request.generateKey { writer.append("generateKey", .bool(generate)) }
            if let yes = request.assumeYes { writer.append("yes", .bool(yes)) }
            if let mode = request.mode { writer.append("mode", .text(mode.rawValue)) }
            if let admin = request.admin { writer.append("admin", .bool(admin)) }
            if let reader = request.reader { writer.append("reader", .text(reader)) }
            if let serial = request.serial { writer.append("serial", .text(serial)) }
            if let kind = request.application { writer.append("app", .text(kind.rawValue)) }
            if let slot = request.slot { writer.append("slot", .text(slot)) }
            if let name = request.applicationName { writer.append("applicationName", .text(name.rawValue)) }
            if let uri = request.tokenURI { writer.append("tokenURI", .text(uri)) }
            if let pinpad = request.pinpad { writer.append("pinpad", .bool(pinpad)) }
            if let keyring = request.loginKeyring { writer.append("loginKeyring", .bool(keyring)) }
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

extension ServerMessage {
    /// The writer holding this message, for a reply that appends a secret member before finishing it.
    public var writer: LineWriter {
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
    public var line: [UInt8] { writer.finish() }
}

/// Base64 (RFC 4648, with padding), strict on decode.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Encodes bytes.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value =
                (UInt32(chunk[0]) << 16) | (UInt32(chunk.count > 1 ? chunk[1] : 0) << 8)
                | UInt32(chunk.count > 2 ? chunk[2] : 0)
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(chunk.count > 1 ? alphabet[Int(value >> 6 & 63)] : UInt8(ascii: "="))
            out.append(chunk.count > 2 ? alphabet[Int(value & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes text, or nil when it is not canonical padded base64.
    public static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < input.count {
            var value: UInt32 = 0
            var padding = 0
            for offset in 0..<4 {
                let byte = input[index + offset]
                if byte == UInt8(ascii: "=") {
                    guard index + 4 == input.count, offset >= 2 else { return nil }
                    padding += 1
                    value <<= 6
                    continue
                }
                guard padding == 0, let digit = alphabet.firstIndex(of: byte) else { return nil }
                value = value << 6 | UInt32(digit)
            }
            out.append(UInt8(value >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(value >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(value & 0xFF)) }
            index += 4
        }
        return out
    }
}
