import TokenpinCore

@testable import TokenpinAge

/// A transport that reads a script and keeps what is written, as the age client would see it.
final class ScriptTransport: AgeTransport {
    private let input: [UInt8]
    private var at = 0
    /// Bytes handed out per read (1 makes every line cross reads).
    let chunk: Int
    private(set) var output: [UInt8] = []
    /// What the plugin wrote, as bytes.
    var writtenBytes: [UInt8] { output }

    init(_ script: String, chunk: Int = 4096) {
        input = Array(script.utf8)
        self.chunk = chunk
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(AgeProtocolError) -> Int {
        let count = min(buffer.count, chunk, input.count - at)
        for index in 0..<count { buffer[index] = input[at + index] }
        at += count
        return count
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(AgeProtocolError) {
        output += bytes
    }

    /// What the plugin wrote, as (arguments, body) pairs.
    func written() throws -> [(arguments: [String], body: [UInt8])] {
        let reader = AgeStanzaReader(ScriptTransport(String(decoding: output, as: UTF8.self)))
        var stanzas: [(arguments: [String], body: [UInt8])] = []
        while let stanza = try reader.next() { stanzas.append((stanza.arguments, stanza.publicBody)) }
        return stanzas
    }
}

/// An unlocker that answers from a script: a secret, a failure, or a request through the client first.
final class ScriptedUnlocker: AgeIdentityUnlocker {
    enum Answer {
        case secret([UInt8])
        case failure(String)
        /// Asks for a secret with `prompt`, then answers `secret` when the client gave one, else fails.
        case ask(prompt: String, then: [UInt8])
    }

    let answer: Answer
    private(set) var calls: [TokenpinAgeIdentity] = []
    private(set) var answered: [String?] = []

    init(_ answer: Answer) { self.answer = answer }

    func unlock(_ identity: TokenpinAgeIdentity, ui: AgePluginUI) throws(AgeUnlockFailure) -> SecretBytes {
        calls.append(identity)
        switch answer {
        case .secret(var bytes):
            return SecretBytes(consuming: &bytes)
        case .failure(let message):
            throw AgeUnlockFailure(message)
        case .ask(let prompt, var bytes):
            let secret: SecretBytes?
            do {
                secret = try ui.requestSecret(prompt)
            } catch {
                throw AgeUnlockFailure(error.message, protocolError: error)
            }
            guard let secret else {
                answered.append(nil)
                throw AgeUnlockFailure("cancelled")
            }
            answered.append(secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
            return SecretBytes(consuming: &bytes)
        }
    }
}

/// A file made by age 1.1.1 (`age -r OTHER -r NATIVE`), with the native identity that opens it.
enum Fixture {
    static let nativeIdentity = "AGE-SECRET-KEY-16EG0GUDLTTM57TRP7EQC6PC33SKXT7E2GM9W6P88NJX38Q9ACQ5QD066JX"
    static let nativeRecipient = "age1k8yjtzudvfeufaxj4590vpsc8dvc70j9043refl90n9rqphqx9cs0ntjdc"
    /// The header up to and including `---`, which its MAC covers.
    static let header = """
        age-encryption.org/v1
        -> X25519 4aQGwMxe0cxkgXT+BuB1l/0Qep1zN2gFDhxOXgd0nnA
        U+q6G93//KsiWpoID4e05sloqXy0SXEdw1wEYRRkSNg
        -> X25519 qAIgTZC28X99HhH/FBcE4JDA64K/Ixu9VrQ4sYx6tSI
        y2JEtmn05bKQiFO1AUChwU2KlxTrWv4IDAkOSCPjNUc
        ---
        """
    static let mac = "Q05rQJDzm4/rFo0oGC6i6EShW4WDUFSWjlE8k+wwICQ"
    /// The two stanzas: the other recipient's first, the native one's second.
    static let stanzas: [(share: String, body: String)] = [
        ("4aQGwMxe0cxkgXT+BuB1l/0Qep1zN2gFDhxOXgd0nnA", "U+q6G93//KsiWpoID4e05sloqXy0SXEdw1wEYRRkSNg"),
        ("qAIgTZC28X99HhH/FBcE4JDA64K/Ixu9VrQ4sYx6tSI", "y2JEtmn05bKQiFO1AUChwU2KlxTrWv4IDAkOSCPjNUc"),
    ]

    /// The native identity's 32 bytes.
    static var secret: [UInt8] { (try? Bech32.decode(nativeIdentity, limit: nil).bytes) ?? [] }

    /// The tokenpin identity that names the native recipient, for alice.
    static var tokenpinIdentity: TokenpinAgeIdentity {
        TokenpinAgeIdentity(recipient: try! AgeRecipient(parsing: nativeRecipient), user: "alice")
    }

    /// phase 1 as age sends it: the identity, the stanzas, done.
    static func phase1(identity: String = tokenpinIdentity.description, stanzas: [(String, String)] = stanzas)
        -> String
    {
        "-> add-identity \(identity)\n\n"
            + stanzas.map { "-> recipient-stanza 0 X25519 \($0.0)\n\($0.1)\n" }.joined() + "-> done\n\n"
    }
}

/// The bytes of a secret that may be nil, for comparisons in expectations.
func bytes(_ secret: consuming SecretBytes?) -> [UInt8]? {
    guard let secret else { return nil }
    return secret.withUnsafeBytes { Array($0) }
}
