package import TokenpinCore
package import TokenpinService

extension Operation {
    /// Switch an authentication type on or off: the PIN is always on; the token is bound or unbound.
    package struct Toggle: WireOperation {
        static let name = "toggle"
        static let lock = OperationLock.user
        static let fieldNames: Set<String> = ["authType", "on", "method", "generateKey", "yes", "mode", "slot"]

        /// The type switched.
        package var type: AuthenticationType
        /// On or off.
        package var on: Bool
        /// `token off`: the verification to run first (`pin` or `token`).
        package var method: VerificationMethod?
        /// `token on`: create a cv25519 decryption key on the card with the admin PIN.
        package var generateKey: Bool
        /// `token on`: the key generation is confirmed in advance (`--yes`).
        package var assumeYes: Bool
        /// `token on`: the mode to bind in (`both` re-binds a card bound in `either`).
        package var mode: VerificationMode?
        /// `token on`: the PIV slot holding the key to bind (`9d`, `82`...).
        package var slot: String?

        /// Creates the operation.
        package init(
            _ type: AuthenticationType, on: Bool, method: VerificationMethod? = nil, generateKey: Bool = false,
            assumeYes: Bool = false, mode: VerificationMode? = nil, slot: String? = nil
        ) {
            self.type = type
            self.on = on
            self.method = method
            self.generateKey = generateKey
            self.assumeYes = assumeYes
            self.mode = mode
            self.slot = slot
        }

        init(fields: MessageFields) throws(ProtocolError) {
            let name = try fields.string("authType")
            guard let type = AuthenticationType(rawValue: name) else {
                throw ProtocolError(.badField, "`authType` must be pin or token")
            }
            self.init(type, on: try fields.bool("on"), method: try fields.method())
            if let slot = try fields.optionalString("slot") {
                guard (1...8).contains(slot.utf8.count) else {
                    throw ProtocolError(.badField, "`slot` must be 1 to 8 bytes")
                }
                self.slot = slot
            }
            if let name = try fields.optionalString("mode") {
                guard let mode = VerificationMode(rawValue: name) else {
                    throw ProtocolError(.badField, "`mode` must be either or both")
                }
                self.mode = mode
            }
            generateKey = try fields.optionalBool("generateKey") ?? false
            assumeYes = try fields.optionalBool("yes") ?? false
        }

        func encode(into writer: inout LineWriter) {
            writer.append("authType", .text(type.rawValue))
            writer.append("on", .bool(on))
            writer.append(method: method)
            if generateKey { writer.append("generateKey", .bool(true)) }
            if assumeYes { writer.append("yes", .bool(true)) }
            if let mode { writer.append("mode", .text(mode.rawValue)) }
            if let slot { writer.append("slot", .text(slot)) }
        }
    }
}

extension DaemonClient {
    /// Switches the PIN type on (`toggle pin off` is refused as in local mode).
    package func toggle(_ type: AuthenticationType, on: Bool, _ interaction: some Interaction) throws(ServiceError) {
        _ = try run(selected(Request(.toggle(.init(type, on: on)), user: user)), interaction)
    }

    /// `toggle token on`: binds the card present, with the daemon asking the PIN, admin PIN and card PIN here.
    package func enableToken(
        _ interaction: some Interaction, generateKey: Bool = false, assumeYes: Bool = false,
        mode: VerificationMode? = nil, slot: String? = nil
    ) throws(ServiceError) -> VerifyReport {
        let toggle = Operation.Toggle(
            .token, on: true, generateKey: generateKey, assumeYes: assumeYes, mode: mode, slot: slot)
        return try report(selected(Request(.toggle(toggle), user: user)), interaction)
    }

    /// `toggle token off`, after the PIN (`method` nil or `.pin`) or the card (`.token`) verified.
    package func disableToken(_ interaction: some Interaction, method: VerificationMethod? = nil) throws(ServiceError)
        -> VerifyReport
    {
        try report(selected(Request(.toggle(.init(.token, on: false, method: method)), user: user)), interaction)
    }
}

extension DaemonClient {
    /// Switches the PIN type on (`PINOperations`, which `PINBackend` refines; off is refused as in local mode).
    package func togglePIN(on: Bool, _ interaction: some Interaction) throws(ServiceError) {
        try toggle(.pin, on: on, interaction)
    }
}
