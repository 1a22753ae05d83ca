internal import TokenpinCore
package import TokenpinService

/// A request: the first message of an exchange. The operation carries its own values (Operation.swift); the rest
/// is what every request may carry.
package struct Request: Sendable, Equatable {
    /// The operation and its values.
    package var operation: Operation
    /// The user to act on; nil for the caller.
    package var user: String?
    /// How many chances a refused new PIN gets (the client's `Interaction.newPINAttempts`, 1 to 5).
    package var newPINAttempts: Int?
    /// The reader to use (a name or a glob).
    package var reader: String?
    /// The card to use (its serial).
    package var serial: String?
    /// The token application to use (`openpgp`, `piv`, `pkcs11`).
    package var application: TokenApplicationKind?
    /// The RFC 7512 URI of the PKCS#11 key to use (`--token-uri`). The module is never the client's: tokenpind
    /// loads the one its own `pkcs11-module` names.
    package var tokenURI: String?
    /// `false`: card PINs at the keyboard even where the reader has a keypad (`--no-pinpad`); a client can only turn
    /// the keypad off, never on where the daemon's `pinpad = off`.
    package var pinpad: Bool?
    /// Who runs the PAM stack that sent the request (version 3); the daemon reads it only from root peers.
    package var invoker: Invoker?

    /// Creates a request.
    package init(_ operation: Operation, user: String? = nil, newPINAttempts: Int? = nil) {
        self.operation = operation
        self.user = user
        self.newPINAttempts = newPINAttempts
    }

    /// The fields every request may carry, whatever its operation (`Invoker.fieldNames` too from version 3).
    static let commonFieldNames: Set<String> = [
        "v", "type", "op", "user", "newPINAttempts", "reader", "serial", "app", "tokenURI", "pinpad",
    ]
}

/// Who invoked a PAM stack, as the PAM module reports it in a request (protocol version 3): the real uid of the
/// process it runs in (`getuid()`), and the items `PAM_SERVICE`, `PAM_RHOST`, `PAM_TTY`, `PAM_RUSER`.
///
/// The daemon trusts these only from a root peer (the module runs inside login, su, sshd, sudo); a peer that is not
/// root is always the user themselves.
package struct Invoker: Sendable, Equatable {
    /// The invoking real uid.
    package var uid: UInt32
    /// `PAM_SERVICE` (`su`, `sshd`, `sudo`, `login`).
    package var service: String?
    /// `PAM_RHOST`: set by sshd (and other remote logins).
    package var rhost: String?
    /// `PAM_TTY`.
    package var tty: String?
    /// `PAM_RUSER`: the requesting user, as the application says.
    package var ruser: String?

    /// Creates an invoker.
    package init(uid: UInt32, service: String? = nil, rhost: String? = nil, tty: String? = nil, ruser: String? = nil) {
        self.uid = uid
        self.service = service
        self.rhost = rhost
        self.tty = tty
        self.ruser = ruser
    }

    /// The wire names of the invoker fields.
    static let fieldNames: Set<String> = ["invokerUID", "service", "rhost", "tty", "ruser"]
}

/// What a client sends.
package enum ClientMessage: Sendable, Equatable {
    /// Start an operation.
    case request(Request)
    /// The answer to a `prompt`; the bytes are a secret and are wiped by whoever consumes them.
    case secret(prompt: String, value: [UInt8])
    /// The answer to a `question`.
    case confirm(Bool)
    /// The answer to a `choice`: the index of the option chosen.
    case choice(Int)
    /// Stop the operation at the current prompt.
    case cancel
}

/// What the daemon sends.
package enum ServerMessage: Sendable, Equatable {
    /// Asks for a secret; `card` and `triesLeft` for card prompts.
    case prompt(name: String, card: String?, triesLeft: Int?)
    /// Asks a yes/no question; with `typed`, the answer is yes only when the person typed that word (a key
    /// about to be replaced on a card).
    case question(String, typed: String? = nil)
    /// Asks the person to pick one of `options` (several cards and none named): the client lists them and answers
    /// with the index, as local mode asks on the terminal; a client that cannot ask answers `cancel`.
    case choice(String, options: [String])
    /// Something happened (flat fields: `event` plus data).
    case event(name: String, fields: [JSONMember])
    /// The final answer: `exitCode` from the exit-code table plus the operation's fields.
    case result(exitCode: Int, fields: [JSONMember])
    /// The final answer of a failed operation or a broken request.
    case error(code: String, message: String, exitCode: Int, fields: [JSONMember])
}
