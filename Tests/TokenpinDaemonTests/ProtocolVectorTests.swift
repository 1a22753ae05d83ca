import Foundation
import Testing
import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// The shared protocol vectors (Tests/Vectors/protocol, README.md there): the codec decodes every line and encodes
/// it again byte for byte. pam/wire-tests.c reads the same files for the PAM module's reader and writer.
struct ProtocolVector: CustomTestStringConvertible, Sendable {
    let tag: String
    let line: String
    let meaning: String
    /// For `old-*`: the canonical line after it, which it must decode to.
    var canonical: String?

    var testDescription: String { "\(tag) \(line)" }

    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Vectors/protocol")

    static func load(_ name: String) -> [ProtocolVector] {
        guard let text = try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8) else {
            return []
        }
        var vectors: [ProtocolVector] = []
        var meaning: [String] = []
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line.hasPrefix("#") {
                meaning.append(String(line.dropFirst(2)))
                continue
            }
            guard let space = line.firstIndex(of: " ") else { continue }
            var tag = String(line[..<space])
            var rest = String(line[line.index(after: space)...])
            if tag == "refused", let second = rest.firstIndex(of: " ") {
                tag += " " + rest[..<second]
                rest = String(rest[rest.index(after: second)...])
            }
            if let previous = vectors.last, previous.tag.hasPrefix("old-"), previous.canonical == nil {
                vectors[vectors.count - 1].canonical = rest
            }
            // A vector with no comment of its own shares the one before it (an old line and its canonical form).
            let said = meaning.isEmpty ? (vectors.last?.meaning ?? "") : meaning.joined(separator: " ")
            vectors.append(ProtocolVector(tag: tag, line: rest, meaning: said))
            meaning = []
        }
        return vectors
    }

    static let client = load("client.vectors")
    static let server = load("server.vectors")

    var bytes: [UInt8] { Array(line.utf8) }
}

@Suite struct ProtocolVectorTests {
    @Test func theVectorsAreThere() {
        #expect(ProtocolVector.client.count >= 20)
        #expect(ProtocolVector.server.count >= 20)
        let tags = Set((ProtocolVector.client + ProtocolVector.server).map { $0.tag.split(separator: " ")[0] })
        #expect(
            tags == [
                "client", "client-pam", "old-client", "refused", "server", "server-pam", "old-server", "pam-refuses",
            ])
        #expect(
            (ProtocolVector.client + ProtocolVector.server).allSatisfy { !$0.meaning.isEmpty || $0.canonical == nil })
    }

    @Test(arguments: ProtocolVector.client)
    func aClientLineDecodesAndEncodesTheSame(_ vector: ProtocolVector) throws {
        switch vector.tag {
        case "client", "client-pam":
            let message = try ClientMessage.parse(vector.bytes)
            #expect(message.line == vector.bytes + [0x0A])
        case "old-client":
            let canonical = try #require(vector.canonical)
            #expect(try ClientMessage.parse(vector.bytes) == ClientMessage.parse(Array(canonical.utf8)))
        default:
            let code = try #require(ProtocolError.Code(rawValue: String(vector.tag.dropFirst("refused ".count))))
            #expect(throws: ProtocolError.self) { try ClientMessage.parse(vector.bytes) }
            do {
                _ = try ClientMessage.parse(vector.bytes)
            } catch {
                #expect(error.code == code, "\(error)")
            }
        }
    }

    @Test(arguments: ProtocolVector.client.filter { $0.tag == "client-pam" && $0.line.contains(#""secret""#) })
    func aSecretLineFromGuardedMemoryIsTheSame(_ vector: ProtocolVector) throws {
        guard case .secret(let prompt, let value) = try ClientMessage.parse(vector.bytes) else {
            Issue.record("not a secret line")
            return
        }
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let writer = LineChannel(fd: fds[0])
        let reader = LineChannel(fd: fds[1])
        let secret = SecretBytes(count: value.count) { $0.copyBytes(from: value) }
        try writer.sendSecret(prompt: prompt, secret)
        #expect(try reader.readLine(timeoutMilliseconds: 5000) == vector.bytes)
    }

    @Test(arguments: ProtocolVector.server)
    func aServerLineDecodesAndEncodesTheSame(_ vector: ProtocolVector) throws {
        switch vector.tag {
        case "server", "server-pam":
            let message = try ServerMessage.parse(vector.bytes)
            #expect(message.line == vector.bytes + [0x0A])
            try typed(message, vector)
        case "old-server":
            let canonical = try #require(vector.canonical)
            #expect(try ServerMessage.parse(vector.bytes) == ServerMessage.parse(Array(canonical.utf8)))
        default:
            // `pam-refuses`: lines the Swift codec reads (nested values, for `status`) or refuses (duplicates);
            // only the C module's reader is tested on them.
            break
        }
    }

    /// Decodes the message to its typed value where there is one and encodes that again.
    func typed(_ message: ServerMessage, _ vector: ProtocolVector) throws {
        switch message {
        case .prompt(let name, let card, let tries):
            let prompt = try #require(SecretPrompt(name: name, card: card, triesLeft: tries))
            switch prompt {
            case .pin, .currentPIN:
                // The PIN's tries are the daemon's to add (the record's counter), not the prompt's.
                #expect(prompt.message == .prompt(name: name, card: card, triesLeft: nil))
            default:
                #expect(prompt.message == message)
            }
        case .event(let name, let fields):
            guard let event = Event(name: name, fields: fields) else {
                #expect(["cardInserted", "cardRemoved", "readerAdded", "readerRemoved"].contains(name))
                return
            }
            #expect(event.protocolFields == fields)
        case .result(let exitCode, var fields) where fields.contains { $0.key == "outcome" }:
            let secretKeys = [DeriveWire.keyField, LoginKeyringWire.passwordField]
            let secret = fields.first { secretKeys.contains($0.key) }
            fields.removeAll { secretKeys.contains($0.key) }
            let report = try VerifyReport(protocolFields: fields)
            #expect(Int(report.exitCode.rawValue) == exitCode)
            #expect(report.protocolFields == fields)
            guard let secret, case .string(let value) = secret.value else { return }
            let line: [UInt8]
            if secret.key == DeriveWire.keyField {
                let hex = SecretBytes(count: value.count) { $0.copyBytes(from: value) }
                guard let key = KeyEncoding.decodeHex(hex, count: ApplicationKeys.keyLength) else {
                    Issue.record("`applicationKey` is not 64 hex digits")
                    return
                }
                line = DeriveWire.resultLine(exitCode: exitCode, fields: report.protocolFields, key: key)
            } else {
                let password = SecretBytes(count: value.count) { $0.copyBytes(from: value) }
                line = LoginKeyringWire.resultLine(
                    exitCode: exitCode, fields: report.protocolFields, password: password)
            }
            #expect(line == vector.bytes + [0x0A])
        case .error(let code, let text, _, let fields) where !code.hasPrefix("protocol-"):
            let error = ServiceError(protocolCode: code, message: text, fields: fields)
            #expect(error.protocolMessage == message)
        default:
            break
        }
    }
}
