import TokenpinCore

/// `text`'s UTF-8 bytes in guarded memory (a PIN, a password, a recovery key as typed).
package func secret(_ text: String) -> SecretBytes {
    var bytes = Array(text.utf8)
    return SecretBytes(consuming: &bytes)
}

/// The text a secret holds, for comparing in a test.
package func text(_ secret: borrowing SecretBytes) -> String {
    secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
}
