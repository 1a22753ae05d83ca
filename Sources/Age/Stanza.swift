package import TokenpinCore

/// The age plugin protocol's input could not be read as stanzas, or the other side went away. The message says
/// what, never holding secret bytes.
package struct AgeProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    package var message: String

    /// An error saying `message`.
    package init(_ message: String) { self.message = message }

    package var description: String { message }
}

/// Where the protocol's bytes come from and go: the plugin's standard input and output, or a test's script.
package protocol AgeTransport: AnyObject {
    /// Reads up to `buffer.count` bytes; 0 at the end of the input.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(AgeProtocolError) -> Int
    /// Writes all of `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) throws(AgeProtocolError)
}

/// One stanza, as the age header and the plugin protocol write it: `-> ARG ARG…`, then the body in base64 lines
/// of 64 characters ending with a shorter (possibly empty) one. The first argument is the stanza's type (the
/// protocol's command); the body is in guarded memory, since some carry a secret (a file key, a PIN).
package struct AgeStanza: ~Copyable {
    /// The type and the arguments: `["recipient-stanza", "0", "X25519", "…"]`.
    package var arguments: [String]
    /// The body's bytes.
    package var body: SecretBytes
    /// Whether the body was longer than the reader keeps (`AgeStanzaReader.bodyLimit`); `body` is then empty.
    package var bodyTooLong = false

    /// A stanza of `arguments` (the type first) and `body`.
    package init(_ arguments: [String], body: consuming SecretBytes) {
        self.arguments = arguments
        self.body = body
    }

    /// A stanza of `arguments` (the type first) and a public body.
    package init(_ arguments: [String], publicBody: [UInt8] = []) {
        self.arguments = arguments
        var copy = publicBody
        self.body = SecretBytes(consuming: &copy)
    }

    /// The type, its first argument.
    package var type: String { arguments.first ?? "" }

    /// The body's bytes as an array, for bodies that are not secret (messages, stanza bodies to unwrap).
    package var publicBody: [UInt8] { body.withUnsafeBytes { Array($0) } }
}

/// Reads stanzas from a transport, refusing what is not one: an argument line without `-> `, an empty argument
/// or a character outside printable ASCII, a body line over 64 characters, a body that is not canonical base64,
/// the input ending inside a stanza. Input is read through guarded memory, so a PIN in a `request-secret` answer
/// never sits in ordinary memory.
package final class AgeStanzaReader {
    /// The longest argument line taken (other plugins' stanzas may carry long arguments).
    package static let lineLimit = 64 * 1024
    /// The longest body kept, in base64 characters; a longer body is read through and dropped (`bodyTooLong`).
    package static let bodyLimit = 16 * 1024

    private let transport: any AgeTransport
    private let input = SecretBytes(count: 4096)
    private var inputStart = 0
    private var inputEnd = 0
    private var ended = false
    private let bodyText = SecretBytes(count: AgeStanzaReader.bodyLimit)

    /// A reader of `transport`'s bytes.
    package init(_ transport: any AgeTransport) { self.transport = transport }

    private func nextByte() throws(AgeProtocolError) -> UInt8? {
        if inputStart == inputEnd {
            if ended { return nil }
            input.withUnsafeMutableBytes { secureZero($0) }
            let count = try input.withUnsafeMutableBytes { buffer throws(AgeProtocolError) in
                try transport.read(into: buffer)
            }
            inputStart = 0
            inputEnd = count
            if count == 0 {
                ended = true
                return nil
            }
        }
        let byte = input.withUnsafeBytes { $0[inputStart] }
        inputStart += 1
        return byte
    }

    /// The next stanza, or nil when the input ends cleanly between stanzas.
    package func next() throws(AgeProtocolError) -> AgeStanza? {
        guard let arguments = try readArgumentLine() else { return nil }
        let body = try readBody(of: arguments[0])
        if body.tooLong {
            bodyText.withUnsafeMutableBytes { secureZero($0) }
            var stanza = AgeStanza(arguments)
            stanza.bodyTooLong = true
            return stanza
        }
        let decoded = AgeBase64.decode(bodyText, count: body.kept)
        bodyText.withUnsafeMutableBytes { secureZero($0) }
        guard let decoded else {
            throw AgeProtocolError("the body of the '\(arguments[0])' stanza is not canonical base64")
        }
        return AgeStanza(arguments, body: decoded)
    }

    /// The argument line (public text): `-> ` and printable ASCII arguments, none empty; nil when the input ends
    /// cleanly before it.
    private func readArgumentLine() throws(AgeProtocolError) -> [String]? {
        var line: [UInt8] = []
        while true {
            guard let byte = try nextByte() else {
                if line.isEmpty { return nil }
                throw AgeProtocolError("the input ended in the middle of a line")
            }
            if byte == 0x0A { break }
            guard line.count < Self.lineLimit else {
                throw AgeProtocolError("a line over \(Self.lineLimit) bytes")
            }
            line.append(byte)
        }
        guard line.count > 3, line.starts(with: Array("-> ".utf8)) else {
            throw AgeProtocolError("a stanza must start with '-> ' and an argument")
        }
        let text = line.dropFirst(3)
        guard text.allSatisfy({ $0 == 0x20 || (0x21...0x7E).contains($0) }) else {
            throw AgeProtocolError("a stanza argument holds a character outside printable ASCII")
        }
        let arguments = text.split(separator: 0x20, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        guard !arguments.contains(where: \.isEmpty) else {
            throw AgeProtocolError("a stanza has an empty argument (two spaces, or one at the end)")
        }
        return arguments
    }

    /// The body of a `type` stanza: lines of 64 base64 characters, then a shorter one, kept in `bodyText` (guarded
    /// memory) up to `bodyLimit` characters; a longer body is read through (`tooLong`).
    private func readBody(of type: String) throws(AgeProtocolError) -> (kept: Int, tooLong: Bool) {
        var kept = 0
        var tooLong = false
        while true {
            var count = 0
            while true {
                guard let byte = try nextByte() else {
                    throw AgeProtocolError("the input ended inside the body of a '\(type)' stanza")
                }
                if byte == 0x0A { break }
                guard count < 64 else {
                    throw AgeProtocolError("a body line of the '\(type)' stanza is over 64 characters")
                }
                guard Self.isBase64(byte) else {
                    throw AgeProtocolError("the body of the '\(type)' stanza is not base64")
                }
                if kept < Self.bodyLimit {
                    let at = kept
                    bodyText.withUnsafeMutableBytes { $0[at] = byte }
                    kept += 1
                } else {
                    tooLong = true
                }
                count += 1
            }
            if count < 64 { return (kept, tooLong) }
        }
    }

    static func isBase64(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            || byte == 0x2B || byte == 0x2F
    }
}

/// Writes stanzas to a transport: the argument line, then the body in base64 lines of 64 and a shorter last
/// line. A stanza is put together in guarded memory and written in one piece.
package final class AgeStanzaWriter {
    private let transport: any AgeTransport

    /// A writer to `transport`.
    package init(_ transport: any AgeTransport) { self.transport = transport }

    /// Writes `stanza`.
    package func write(_ stanza: borrowing AgeStanza) throws(AgeProtocolError) {
        let head = Array(("-> " + stanza.arguments.joined(separator: " ") + "\n").utf8)
        let text = AgeBase64.encode(stanza.body)
        let lines = text.count / 64 + 1
        let total = head.count + text.count + lines
        let out = SecretBytes(count: total)
        out.withUnsafeMutableBytes { buffer in
            head.withUnsafeBytes { buffer.copyMemory(from: $0) }
            var at = head.count
            text.withUnsafeBytes { body in
                var start = 0
                while true {
                    let end = min(start + 64, body.count)
                    let piece = UnsafeRawBufferPointer(rebasing: body[start..<end])
                    UnsafeMutableRawBufferPointer(rebasing: buffer[at..<(at + piece.count)]).copyMemory(from: piece)
                    at += piece.count
                    buffer[at] = 0x0A
                    at += 1
                    if end - start < 64 { break }
                    start = end
                }
            }
        }
        try out.withUnsafeBytes { bytes throws(AgeProtocolError) in try transport.write(bytes) }
    }

    /// Writes a stanza of `arguments` and a public body.
    package func write(_ arguments: [String], publicBody: [UInt8] = []) throws(AgeProtocolError) {
        try write(AgeStanza(arguments, publicBody: publicBody))
    }
}
