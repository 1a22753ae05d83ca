internal import TokenpinCore

// Every operation a client may ask for, declared once: each is a type in Operations/ holding its typed values,
// its wire name, the lock the daemon takes around it, how its own fields are read and written, and the client's
// call. This file is the one list of them.

/// What the daemon holds while an operation runs (the order is Dispatch's: login password, then the user's lock).
package enum OperationLock: Sendable {
    /// Nothing: the operation reads, or streams, and writes no record.
    case none
    /// The user's lock: the operation reads and writes the user's record.
    case user
    /// The user's lock, after a user with no record proved who they are with the login password
    /// (`enrol-auth = password`): the operation creates a first way in.
    case userAfterFirstWayIn
}

/// An operation as the wire knows it: its values, read from and written to a request's own fields.
protocol WireOperation: Sendable, Equatable {
    /// The `op` value.
    static var name: String { get }
    /// What the daemon holds while it runs.
    static var lock: OperationLock { get }
    /// The fields it takes beyond the ones every request carries.
    static var fieldNames: Set<String> { get }
    /// Reads its fields, strictly (the request's other fields are checked already).
    init(fields: MessageFields) throws(ProtocolError)
    /// Writes its fields, in their canonical order.
    func encode(into writer: inout LineWriter)
}

/// An operation with no values of its own.
protocol FieldlessOperation: WireOperation {
    init()
}

extension FieldlessOperation {
    static var fieldNames: Set<String> { [] }
    init(fields: MessageFields) throws(ProtocolError) { self.init() }
    func encode(into writer: inout LineWriter) {}
}

/// An operation a client asks for, with its typed values.
package enum Operation: Sendable, Equatable {
    case ping(Ping)
    case enrol(Enrol)
    case verify(Verify)
    case change(Change)
    case reset(Reset)
    case status(Status)
    case types(Types)
    case toggle(Toggle)
    case `import`(Import)
    case watch(Watch)
    case readers(Readers)
    case cardChangePIN(CardChangePIN)
    case cardUnblock(CardUnblock)
    case unenrol(Unenrol)
    case derive(Derive)
    case sealLoginPassword(SealLoginPassword)

    /// The operation's values, as the wire sees them.
    var values: any WireOperation {
        switch self {
        case .ping(let values): values
        case .enrol(let values): values
        case .verify(let values): values
        case .change(let values): values
        case .reset(let values): values
        case .status(let values): values
        case .types(let values): values
        case .toggle(let values): values
        case .import(let values): values
        case .watch(let values): values
        case .readers(let values): values
        case .cardChangePIN(let values): values
        case .cardUnblock(let values): values
        case .unenrol(let values): values
        case .derive(let values): values
        case .sealLoginPassword(let values): values
        }
    }

    /// How a request's own fields become its operation: one per operation, found by its wire name.
    struct Entry: Sendable {
        let type: any WireOperation.Type
        let read: @Sendable (MessageFields) throws(ProtocolError) -> Operation

        init<Values: WireOperation>(_ type: Values.Type, _ wrap: @escaping @Sendable (Values) -> Operation) {
            self.type = type
            read = { (fields: MessageFields) throws(ProtocolError) -> Operation in wrap(try Values(fields: fields)) }
        }
    }

    /// Every operation.
    static let all: [Entry] = [
        Entry(Ping.self, Operation.ping), Entry(Enrol.self, Operation.enrol), Entry(Verify.self, Operation.verify),
        Entry(Change.self, Operation.change), Entry(Reset.self, Operation.reset), Entry(Status.self, Operation.status),
        Entry(Types.self, Operation.types), Entry(Toggle.self, Operation.toggle), Entry(Import.self, Operation.import),
        Entry(Watch.self, Operation.watch), Entry(Readers.self, Operation.readers),
        Entry(CardChangePIN.self, Operation.cardChangePIN), Entry(CardUnblock.self, Operation.cardUnblock),
        Entry(Unenrol.self, Operation.unenrol), Entry(Derive.self, Operation.derive),
        Entry(SealLoginPassword.self, Operation.sealLoginPassword),
    ]

    /// Every operation's wire name.
    package static var names: [String] { all.map { $0.type.name } }

    /// The operations by wire name.
    static let byName: [String: Entry] = Dictionary(uniqueKeysWithValues: all.map { ($0.type.name, $0) })

    /// Every field some operation takes beyond the common ones.
    static let ownFieldNames: Set<String> = all.reduce(into: []) { names, entry in
        names.formUnion(entry.type.fieldNames)
    }

    /// The `op` value (`verify`, `card-unblock`...).
    package var name: String { type(of: values).name }

    /// What the daemon holds while it runs.
    package var lock: OperationLock { type(of: values).lock }

    /// The fields this operation takes beyond the common ones.
    var fieldNames: Set<String> { type(of: values).fieldNames }
}

extension MessageFields {
    /// The optional `method` field (`verify`, `derive`, `unenrol`, `toggle token off`): `pin` or `token`.
    func method() throws(ProtocolError) -> VerificationMethod? {
        guard let name = try optionalString("method") else { return nil }
        guard name == "pin" || name == "token", let method = VerificationMethod(rawValue: name) else {
            throw ProtocolError(.badField, "`method` must be pin or token")
        }
        return method
    }
}

extension LineWriter {
    /// Appends `method` when there is one.
    mutating func append(method: VerificationMethod?) {
        if let method { append("method", .text(method.rawValue)) }
    }
}
