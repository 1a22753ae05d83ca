internal import TokenpinCore
package import TokenpinService

// An operation with no behaviour of tokenpind's own, run the same way wherever it runs: its declaration in
// Operations/ says how it runs on the service, how its outcome becomes the result's fields and how the client reads
// them back. From that one declaration follow the local run (`PINService.perform`), the client's call
// (`DaemonClient.perform`) and tokenpind's dispatch (`Daemon.served`): none of them names the operation.

/// What a client's request for an operation carries besides the operation and its values.
package enum RequestScope: Sendable {
    /// Nothing more: the daemon answers for anyone (`ping`).
    case daemon
    /// The user to act on (`--user`).
    case user
    /// The user, the card selection and the keypad choice (`--reader`, `--serial`, `--app`, `--no-pinpad`).
    case userAndCard
}

/// An operation that runs on the service alone, the same in process and in tokenpind: no counted attempt, no audit
/// record, no event of the daemon's own, no secret in its result.
///
/// Its values are a `WireOperation` too (their fields, wire name and lock); `operation` is the case of `Operation`
/// that carries them. (This protocol cannot refine `WireOperation`: that one's requirements speak of the wire's own
/// reader and writer, which stay inside this module.)
package protocol PerformableOperation: Sendable {
    /// What the operation gives back (`StatusReport`, `[ReaderInfo]`...).
    associatedtype Outcome

    /// The operation, as a request carries it.
    var operation: Operation { get }

    /// What the client's request carries besides the operation (`userAndCard` unless the declaration says less).
    static var scope: RequestScope { get }

    /// Runs the operation on `service`, asking through `interaction`: the local run, and tokenpind's.
    func run(on service: PINService, _ interaction: some Interaction) throws(ServiceError) -> Outcome

    /// The result's fields tokenpind writes for `outcome`.
    func resultFields(for outcome: Outcome) -> [JSONMember]

    /// Reads the outcome back from the result's fields, strictly.
    func outcome(fromResult fields: [JSONMember]) throws(ProtocolError) -> Outcome

    /// The exit code of the result that carries `outcome` (`success` unless the declaration says otherwise).
    func exitCode(for outcome: Outcome) -> ExitCode
}

extension PerformableOperation {
    /// The user, the card selection and the keypad choice.
    package static var scope: RequestScope { .userAndCard }

    /// Success: an operation that returns an outcome succeeded.
    package func exitCode(for outcome: Outcome) -> ExitCode { .success }
}

extension Operation {
    /// The operation's values when it runs on the service alone (`PerformableOperation`); nil when tokenpind has
    /// behaviour of its own for it.
    package var performable: (any PerformableOperation)? { values as? any PerformableOperation }
}

/// Where the CLI's operations run: the named ones of `PINOperations`, and every `PerformableOperation` through one
/// generic call.
package protocol PINBackend: PINOperations {
    /// Runs `operation`, asking through `interaction`, and returns its outcome.
    func perform<Performed: PerformableOperation>(_ operation: Performed, _ interaction: some Interaction)
        throws(ServiceError) -> Performed.Outcome
}

extension PINBackend {
    /// Runs `operation`, which asks nothing (a prompt is answered `cancel`), and returns its outcome.
    package func perform<Performed: PerformableOperation>(_ operation: Performed) throws(ServiceError)
        -> Performed.Outcome
    {
        try perform(operation, NoInteraction())
    }
}

extension PINService: PINBackend {
    /// Runs `operation` in this process.
    package func perform<Performed: PerformableOperation>(_ operation: Performed, _ interaction: some Interaction)
        throws(ServiceError) -> Performed.Outcome
    {
        try operation.run(on: self, interaction)
    }
}

extension DaemonClient: PINBackend {
    /// Runs `operation` in tokenpind: sends the request, relays what the daemon asks to `interaction`, and reads the
    /// outcome back from the result (a result it cannot read is `serviceUnavailable`).
    package func perform<Performed: PerformableOperation>(_ operation: Performed, _ interaction: some Interaction)
        throws(ServiceError) -> Performed.Outcome
    {
        let fields = try run(request(for: operation), interaction)
        do {
            return try operation.outcome(fromResult: fields)
        } catch {
            throw .serviceUnavailable("tokenpind sent a malformed \(operation.operation.name) result: \(error.detail)")
        }
    }

    /// The request for `operation`, with what its scope says it carries.
    func request(for operation: some PerformableOperation) -> Request {
        switch type(of: operation).scope {
        case .daemon: Request(operation.operation)
        case .user: Request(operation.operation, user: user)
        case .userAndCard: selected(Request(operation.operation, user: user))
        }
    }
}
