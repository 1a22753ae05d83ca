internal import TokenpinCore

// Every operation a client may ask for, declared once: each is a type in Operations/, in a file named after it,
// holding its typed values, its wire name, the lock the daemon takes around it, how its own fields are read and
// written, and the client's call.

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

// The enum itself, `Operation`, with a case per file in Operations/, its `values` and its `all`, is written at build
// time by the Registries plugin (Plugins/Registries): declaring an operation is adding its file.
extension Operation {
    /// How a request's own fields become its operation: one per operation, found by its wire name.
    struct Entry: Sendable {
        let type: any WireOperation.Type
        let read: @Sendable (MessageFields) throws(ProtocolError) -> Operation

        init<Values: WireOperation>(_ type: Values.Type, _ wrap: @escaping @Sendable (Values) -> Operation) {
            self.type = type
            read = { (fields: MessageFields) throws(ProtocolError) -> Operation in wrap(try Values(fields: fields)) }
        }
    }

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
