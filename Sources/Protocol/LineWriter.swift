package import TokenpinCore

/// The one writer of protocol lines: every message the daemon and the client send, secrets included, is built
/// here, so the version (`"v"`), the member order (`v`, `type`, then the message's fields) and the framing (one
/// object, ended by a newline) come from one place.
///
/// A secret member (a PIN, the recovery key, a derived key, the login password) is quoted straight from guarded
/// memory into the line. The buffer never grows while it holds a secret without the old storage being wiped
/// first, so the finished line is the only copy; whoever takes it wipes it once written (`LineChannel.send(_:)`
/// does).
package struct LineWriter: ~Copyable {
    private var bytes: [UInt8]

    /// Starts a message of `type`: `{"v":<ProtocolLimits.version>,"type":"<type>"`, with room for `reserving`
    /// more bytes (the worst case of the secrets to come, so the buffer does not move).
    package init(_ type: String, reserving extra: Int = 0) {
        bytes = []
        bytes.reserveCapacity(256 + extra)
        bytes += Array("{\"v\":\(ProtocolLimits.version)".utf8)
        append("type", .text(type))
    }

    /// Appends `,"key":value`.
    package mutating func append(_ key: String, _ value: JSONValue) {
        var piece: [UInt8] = [UInt8(ascii: ",")]
        JSONValue.quote(Array(key.utf8), into: &piece)
        piece.append(UInt8(ascii: ":"))
        value.serialize(into: &piece)
        makeRoom(piece.count)
        bytes += piece
    }

    /// Appends each member in order.
    package mutating func append(contentsOf members: [JSONMember]) {
        for member in members { append(member.key, member.value) }
    }

    /// Appends `,"key":"<secret, escaped>"`, quoting the bytes straight into the line.
    package mutating func appendSecret(_ key: String, bytes secret: UnsafeRawBufferPointer) {
        makeRoom(key.utf8.count * 6 + 4 + secret.count * 6)
        bytes.append(UInt8(ascii: ","))
        JSONValue.quote(Array(key.utf8), into: &bytes)
        bytes.append(UInt8(ascii: ":"))
        JSONValue.quote(secret, into: &bytes)
    }

    /// Appends `,"key":"<secret, escaped>"` from guarded memory.
    package mutating func appendSecret(_ key: String, _ secret: borrowing SecretBytes) {
        secret.withUnsafeBytes { buffer in appendSecret(key, bytes: buffer) }
    }

    /// Ends the object and the line. The caller owns the bytes: a line that holds a secret is wiped once written.
    package consuming func finish() -> [UInt8] {
        makeRoom(0)
        bytes += [UInt8(ascii: "}"), 0x0A]
        return bytes
    }

    /// Ensures `count` more bytes, the closing brace and the newline fit without the array reallocating on its
    /// own; when they do not, the bytes move to a larger buffer and the old one is wiped.
    private mutating func makeRoom(_ count: Int) {
        let needed = bytes.count + count + 2
        guard bytes.capacity < needed else { return }
        var larger: [UInt8] = []
        larger.reserveCapacity(Swift.max(needed, bytes.capacity * 2))
        larger += bytes
        wipe(&bytes)
        bytes = larger
    }
}
