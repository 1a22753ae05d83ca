package import TokenpinCore

// The login keyring on the wire. `seal-login-password` asks for the password with a `password` prompt and
// answers a result (exit 0) once it is sealed. A `verify` with `"loginKeyring":true` from PAM may carry the
// sealed password back in its result's `loginPassword` field, written into the reply line straight from guarded
// memory (the line is wiped once sent), as the enrolment's result carries the recovery key.

/// The names the login keyring uses on the wire.
package enum LoginKeyringWire {
    /// The result field holding the login password.
    package static let passwordField = "loginPassword"

    /// The result line of a verification that releases `password`: the report's fields, then `loginPassword`,
    /// quoted from guarded memory (the caller wipes the line once it is sent).
    package static func resultLine(exitCode: Int, fields: [JSONMember], password: borrowing SecretBytes) -> [UInt8] {
        var writer = ServerMessage.result(exitCode: exitCode, fields: fields).writer
        writer.appendSecret(passwordField, password)
        return writer.finish()
    }
}
