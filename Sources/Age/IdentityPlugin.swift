package import TokenpinCore

/// The client's user interface, as the plugin reaches it in phase 2: messages (`msg`) and secrets
/// (`request-secret`). Each command waits for the client's answer.
package final class AgePluginUI {
    let reader: AgeStanzaReader
    let writer: AgeStanzaWriter

    init(reader: AgeStanzaReader, writer: AgeStanzaWriter) {
        self.reader = reader
        self.writer = writer
    }

    /// The client's answer to the command just sent: `ok` and its body, or nil for `fail`, `unsupported` and
    /// anything else.
    private func answer(to command: String) throws(AgeProtocolError) -> SecretBytes? {
        guard let stanza = try reader.next() else {
            throw AgeProtocolError("the client closed the connection before answering '\(command)'")
        }
        guard stanza.type == "ok", !stanza.bodyTooLong else { return nil }
        return stanza.body
    }

    /// Shows `text` to the person (`msg`); false when the client cannot show it.
    @discardableResult
    package func message(_ text: String) throws(AgeProtocolError) -> Bool {
        try writer.write(["msg"], publicBody: Array(text.utf8))
        return try answer(to: "msg") != nil
    }

    /// Asks the person for a secret (`request-secret`) with `prompt`; nil when the client answered `fail`
    /// (cancelled, or no way to ask).
    package func requestSecret(_ prompt: String) throws(AgeProtocolError) -> SecretBytes? {
        try writer.write(["request-secret"], publicBody: Array(prompt.utf8))
        return try answer(to: "request-secret")
    }
}

/// Why an identity gave no key: said to the client as `error identity N`, so age stops with it.
package struct AgeUnlockFailure: Error, Sendable {
    /// What the person reads (after "tokenpin plugin: ").
    package var message: String
    /// The protocol broke while asking (the client went away): nothing more can be sent.
    package var protocolError: AgeProtocolError?

    /// A failure saying `message`.
    package init(_ message: String, protocolError: AgeProtocolError? = nil) {
        self.message = message
        self.protocolError = protocolError
    }
}

/// What opens a tokenpin identity: a verification (its prompts through `ui`) and the application key of `age`.
package protocol AgeIdentityUnlocker {
    /// The X25519 secret of `identity` in guarded memory, after a verification; throws what to tell the person.
    func unlock(_ identity: TokenpinAgeIdentity, ui: AgePluginUI) throws(AgeUnlockFailure) -> SecretBytes
}

/// The age plugin protocol's `identity-v1` state machine (c2sp.org/age-plugin) for tokenpin's identities.
///
/// Phase 1 (the client's): `add-identity` (only `AGE-PLUGIN-TOKENPIN-1…`), `recipient-stanza FILE TYPE ARGS…`
/// and `done`; other commands are grease and ignored. Phase 2 (the plugin's): nothing is asked unless there is a
/// tokenpin identity and an X25519 stanza; then one verification opens the identity, each file's X25519 stanzas
/// are tried, and `file-key` answers the first that opens. Stanzas of other types are left alone, an X25519 stanza
/// that is malformed is `error stanza` (and its file is not opened), an identity that is not tokenpin's or does
/// not open is `error identity`, and nothing is unwrapped then.
package enum AgeIdentityPlugin {
    /// How a session ended.
    package enum Outcome: Equatable, Sendable {
        /// Phase 2 ended with `done`: `fileKeys` file keys were given, `errors` errors sent.
        case done(fileKeys: Int, errors: Int)
        /// The protocol broke (malformed input, the client went away); the message says how.
        case failed(AgeProtocolError)
    }

    /// The most stanzas kept from phase 1 (X25519 ones; the others are only counted).
    package static let stanzaLimit = 4096

    struct X25519Stanza {
        var index: Int
        var share: [UInt8]
        var body: [UInt8]
    }

    struct File {
        var number: Int
        var stanzas: [X25519Stanza] = []
        var count = 0
        var invalid: (stanza: Int, message: String)?
    }

    /// What phase 1 told: the identities (each parsed, or refused with why) and each file's X25519 stanzas.
    struct PhaseOne {
        var identities: [Result<TokenpinAgeIdentity, AgeKeyError>] = []
        var files: [File] = []
        /// X25519 stanzas kept over all files (at most `stanzaLimit`).
        var kept = 0

        /// `add-identity IDENTITY`: only tokenpin's parse; a refusal is said in phase 2.
        mutating func addIdentity(_ stanza: borrowing AgeStanza) {
            guard stanza.arguments.count == 2 else {
                identities.append(.failure(AgeKeyError("add-identity takes one identity")))
                return
            }
            identities.append(
                Result { () throws(AgeKeyError) in
                    try TokenpinAgeIdentity(parsing: stanza.arguments[1])
                })
        }

        /// `recipient-stanza FILE TYPE ARGS…`: counted in its file; an X25519 one kept, or its file marked invalid.
        mutating func addRecipientStanza(_ stanza: borrowing AgeStanza) throws(AgeProtocolError) {
            guard stanza.arguments.count >= 3, let number = fileIndex(stanza.arguments[1]) else {
                throw AgeProtocolError("recipient-stanza takes a file index and a stanza")
            }
            if let last = files.last, number < last.number {
                throw AgeProtocolError("recipient-stanza file indices went back (\(number) after \(last.number))")
            }
            if files.last?.number != number { files.append(File(number: number)) }
            let index = files[files.count - 1].count
            files[files.count - 1].count += 1
            guard stanza.arguments[2] == AgeX25519.stanzaType else { return }
            if let problem = x25519Problem(stanza) {
                if files[files.count - 1].invalid == nil { files[files.count - 1].invalid = (index, problem) }
                return
            }
            kept += 1
            guard kept <= stanzaLimit else {
                throw AgeProtocolError("over \(stanzaLimit) X25519 stanzas in one session")
            }
            files[files.count - 1].stanzas.append(
                X25519Stanza(
                    index: index, share: AgeBase64.decode(stanza.arguments[3]) ?? [], body: stanza.publicBody))
        }
    }

    /// Runs the state machine over `transport` until phase 2's `done`.
    package static func run(_ transport: any AgeTransport, unlocker: some AgeIdentityUnlocker) -> Outcome {
        let reader = AgeStanzaReader(transport)
        let writer = AgeStanzaWriter(transport)
        let told: PhaseOne
        do throws(AgeProtocolError) {
            told = try readPhaseOne(reader)
        } catch {
            // The client may still read: say why, as an internal error, then stop.
            try? writer.write(["error", "internal"], publicBody: Array(("malformed input: " + error.message).utf8))
            _ = try? reader.next()
            return .failed(error)
        }
        do throws(AgeProtocolError) {
            return try answerPhaseTwo(told, reader: reader, writer: writer, unlocker: unlocker)
        } catch {
            return .failed(error)
        }
    }

    /// Phase 1, up to its `done`: other commands are grease, or of a later version, and ignored as the protocol
    /// asks.
    static func readPhaseOne(_ reader: AgeStanzaReader) throws(AgeProtocolError) -> PhaseOne {
        var told = PhaseOne()
        while true {
            guard let stanza = try reader.next() else {
                throw AgeProtocolError("the input ended before phase 1's 'done'")
            }
            switch stanza.type {
            case "done": return told
            case "add-identity": told.addIdentity(stanza)
            case "recipient-stanza": try told.addRecipientStanza(stanza)
            default: continue
            }
        }
    }

    /// Phase 2: the errors phase 1 left (invalid stanzas, refused identities), then, when there is something to
    /// open and every identity parsed, one verification for the first identity and each file's key, and `done`.
    static func answerPhaseTwo(
        _ told: PhaseOne, reader: AgeStanzaReader, writer: AgeStanzaWriter, unlocker: some AgeIdentityUnlocker
    ) throws(AgeProtocolError) -> Outcome {
        let ui = AgePluginUI(reader: reader, writer: writer)
        var errors = 0
        func fail(_ arguments: [String], _ message: String) throws(AgeProtocolError) {
            try writer.write(["error"] + arguments, publicBody: Array(message.utf8))
            _ = try reader.next()
            errors += 1
        }
        for file in told.files {
            if let invalid = file.invalid {
                try fail(["stanza", String(file.number), String(invalid.stanza)], invalid.message)
            }
        }
        let refused = told.identities.enumerated().compactMap { index, identity -> (Int, AgeKeyError)? in
            if case .failure(let error) = identity { return (index, error) }
            return nil
        }
        for (index, error) in refused { try fail(["identity", String(index)], error.message) }
        let candidates = told.files.filter { $0.invalid == nil && !$0.stanzas.isEmpty }
        var fileKeys = 0
        if refused.isEmpty, !candidates.isEmpty,
            let (index, identity) = told.identities.enumerated().compactMap({ index, identity in
                (try? identity.get()).map { (index, $0) }
            }).first,
            let secret = try open(identity, index: index, unlocker: unlocker, ui: ui, fail: fail)
        {
            fileKeys = try unwrapFileKeys(
                candidates, secret: secret, recipient: identity.recipient, reader: reader, writer: writer)
            if fileKeys < candidates.count {
                try ui.message(
                    "\(identity.recipient) is not among the recipients of \(fileKeys == 0 ? "this file" : "every file")"
                )
            }
        }
        try writer.write(["done"])
        return .done(fileKeys: fileKeys, errors: errors)
    }

    /// `file-key` for each file one of whose X25519 stanzas `secret` opens; how many were given.
    static func unwrapFileKeys(
        _ files: [File], secret: borrowing SecretBytes, recipient: AgeRecipient, reader: AgeStanzaReader,
        writer: AgeStanzaWriter
    ) throws(AgeProtocolError) -> Int {
        var given = 0
        for file in files {
            for stanza in file.stanzas {
                guard
                    let fileKey = AgeX25519.unwrap(
                        share: stanza.share, body: stanza.body, identity: secret, recipient: recipient)
                else { continue }
                try writer.write(AgeStanza(["file-key", String(file.number)], body: fileKey))
                _ = try reader.next()
                given += 1
                break
            }
        }
        return given
    }

    /// The secret of `identity`, after the unlocker's verification, checked against the recipient the identity
    /// names; nil when it gave none (`fail` has said why to the client).
    static func open(
        _ identity: TokenpinAgeIdentity, index: Int, unlocker: some AgeIdentityUnlocker, ui: AgePluginUI,
        fail: ([String], String) throws(AgeProtocolError) -> Void
    ) throws(AgeProtocolError) -> SecretBytes? {
        let secret: SecretBytes
        do {
            secret = try unlocker.unlock(identity, ui: ui)
        } catch {
            if let broken = error.protocolError { throw broken }
            try fail(["identity", String(index)], error.message)
            return nil
        }
        guard let recipient = try? AgeX25519.recipient(of: secret), recipient == identity.recipient else {
            try fail(
                ["identity", String(index)],
                "this identity is for \(identity.recipient), which \(identity.user)'s record does not open (enrolled "
                    + "again since it was made?); nothing was decrypted")
            return nil
        }
        return secret
    }

    /// A file index: decimal digits, no leading zero, at most 9 of them.
    static func fileIndex(_ text: String) -> Int? {
        let digits = Array(text.utf8)
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ (0x30...0x39).contains($0) }),
            digits.count == 1 || digits[0] != 0x30
        else { return nil }
        return Int(text)
    }

    /// What makes an X25519 stanza (`recipient-stanza FILE X25519 …`) malformed, or nil (c2sp.org/age: exactly one
    /// argument, the canonical base64 of 32 bytes, and a body of exactly 32 bytes).
    static func x25519Problem(_ stanza: borrowing AgeStanza) -> String? {
        guard stanza.arguments.count == 4 else {
            return "an X25519 stanza takes one argument, not \(stanza.arguments.count - 3)"
        }
        guard let share = AgeBase64.decode(stanza.arguments[3]), share.count == 32 else {
            return "an X25519 stanza's share is not the canonical base64 of 32 bytes"
        }
        guard !stanza.bodyTooLong, stanza.body.count == AgeX25519.bodyLength else {
            return "an X25519 stanza's body is not 32 bytes"
        }
        return nil
    }
}
