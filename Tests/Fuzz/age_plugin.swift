// Fuzz target for age-plugin-tokenpin's reading of what age sends (`AgeIdentityPlugin.run` over an in-memory
// transport): the stanza framing, phase 1's commands, the X25519 stanzas and the identities, then phase 2's answers.
// The unlocker opens every tokenpin identity with one fixed secret, so the unwrap runs on whatever stanzas get
// through. Nothing may trap; a session either ends with `done` or fails with a protocol error. The input's first
// line is also read as a recipient and an identity (Bech32). Built by Tests/Fuzz/fuzz.sh against TokenpinAge.
import TokenpinAge
import TokenpinCore

final class FuzzTransport: AgeTransport {
    let input: [UInt8]
    var at = 0
    var written = 0

    init(_ input: [UInt8]) { self.input = input }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(AgeProtocolError) -> Int {
        // Short reads, so lines cross them.
        let count = min(buffer.count, 7, input.count - at)
        for index in 0..<count { buffer[index] = input[at + index] }
        at += count
        return count
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(AgeProtocolError) { written += bytes.count }
}

struct FixedUnlocker: AgeIdentityUnlocker {
    func unlock(_ identity: TokenpinAgeIdentity, ui: AgePluginUI) throws(AgeUnlockFailure) -> SecretBytes {
        var secret = [UInt8](repeating: 0x42, count: 32)
        return SecretBytes(consuming: &secret)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAgePlugin(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch AgeIdentityPlugin.run(FuzzTransport(bytes), unlocker: FixedUnlocker()) {
    case .done(let keys, let errors): precondition(keys >= 0 && errors >= 0)
    case .failed(let error): precondition(!error.message.isEmpty, "a protocol error says nothing")
    }
    let line = String(decoding: bytes.prefix { $0 != 0x0A }, as: UTF8.self)
    _ = try? AgeRecipient(parsing: line)
    if let identity = try? TokenpinAgeIdentity(parsing: line) {
        precondition((try? TokenpinAgeIdentity(parsing: identity.description)) == identity, "no round trip")
    }
    return 0
}
