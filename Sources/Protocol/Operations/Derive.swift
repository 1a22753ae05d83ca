package import TokenpinCore
package import TokenpinService

// `derive` on the wire: the request names the application (`applicationName`); a successful result carries the
// key as 64 hex digits in `applicationKey`, written into the reply line straight from guarded memory, as the
// enrolment's result carries the recovery key. A failed verification's result has no key.

extension Operation {
    /// Verify as `verify` does, then release the key of an application.
    package struct Derive: WireOperation {
        static let name = "derive"
        static let lock = OperationLock.user
        static let fieldNames: Set<String> = ["method", "applicationName"]

        /// The application whose key to release (`restic`, `ssh:work`).
        package var application: ApplicationName
        /// The one authentication type to use (`pin` or `token`); nil: as `verify` chooses.
        package var method: VerificationMethod?

        /// Creates the operation.
        package init(application: ApplicationName, method: VerificationMethod? = nil) {
            self.application = application
            self.method = method
        }

        init(fields: MessageFields) throws(ProtocolError) {
            method = try fields.method()
            guard let name = ApplicationName(try fields.string("applicationName")) else {
                throw ProtocolError(.badField, "`applicationName` must be \(ApplicationName.shape)")
            }
            application = name
        }

        func encode(into writer: inout LineWriter) {
            writer.append(method: method)
            writer.append("applicationName", .text(application.rawValue))
        }
    }
}

extension DaemonClient {
    /// Verifies through tokenpind and receives the application key in guarded memory.
    package func derive(_ interaction: some Interaction, application: ApplicationName, method: VerificationMethod?)
        throws(ServiceError) -> DerivedKey
    {
        let request = selected(Request(.derive(.init(application: application, method: method)), user: user))
        var fields = try run(request, interaction)
        // The key's bytes are taken out and every other reference dropped first, so the wipe reaches them in place.
        var keyText: SecretBytes?
        if let index = fields.firstIndex(where: { $0.key == DeriveWire.keyField }) {
            guard case .string(var bytes) = fields[index].value else {
                throw .serviceUnavailable("tokenpind sent a malformed key")
            }
            fields[index].value = .null
            fields.remove(at: index)
            keyText = SecretBytes(consuming: &bytes)
        }
        let report: VerifyReport
        do {
            report = try VerifyReport(protocolFields: fields)
        } catch {
            throw .serviceUnavailable("tokenpind sent a malformed result: \(error.detail)")
        }
        guard let text = keyText.take() else {
            if case .verified = report.outcome { throw .serviceUnavailable("tokenpind verified but sent no key") }
            return DerivedKey(report: report, key: nil)
        }
        guard case .verified = report.outcome,
            let key = KeyEncoding.decodeHex(text, count: ApplicationKeys.keyLength)
        else {
            throw .serviceUnavailable("tokenpind sent a malformed key")
        }
        return DerivedKey(report: report, key: key)
    }
}

/// The names `derive` uses on the wire.
package enum DeriveWire {
    /// The result field holding the key in hex.
    package static let keyField = "applicationKey"
    /// The event `watch` subscribers see when a key was released (`app`: the application's name, never the key).
    package static let releasedEvent = "key-released"

    /// The result line of a successful `derive`: the report's fields, then `applicationKey` in hex written from
    /// guarded memory into the line (the caller wipes the line once it is sent).
    package static func resultLine(exitCode: Int, fields: [JSONMember], key: borrowing SecretBytes) -> [UInt8] {
        var writer = ServerMessage.result(exitCode: exitCode, fields: fields).writer
        writer.appendSecret(keyField, KeyEncoding.hex.encode(key))
        return writer.finish()
    }
}
