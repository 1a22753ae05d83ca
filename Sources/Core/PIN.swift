/// A PIN as the user typed it, in guarded memory.
///
/// Never `Codable`, never a `String`, never printable: the bytes are reached through `secret` only.
public struct PIN: ~Copyable, Sendable {
    /// The UTF-8 bytes of the PIN.
    public let secret: SecretBytes

    /// Wraps secret bytes as a PIN.
    public init(_ secret: consuming SecretBytes) {
        self.secret = secret
    }

    /// The number of bytes.
    public var count: Int { secret.count }

    /// Whether both PINs are the same, in constant time for equal lengths.
    public func matches(_ other: borrowing PIN) -> Bool { secret.isEqual(to: other.secret) }

    /// A redaction.
    public var description: String { "PIN(redacted)" }
}
