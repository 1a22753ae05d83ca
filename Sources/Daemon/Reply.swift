import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// The final message of an operation; the enrolment's carries the recovery key and is wiped once sent.
struct Reply: ~Copyable {

    private var bytes: [UInt8]

    init(_ message: ServerMessage) { bytes = message.line }

    /// The enrolment result: the recovery key written straight into a reserved buffer, never a `String`.
    static func enrolment(_ result: consuming EnrolmentResult) -> Reply {
        var writer = ServerMessage.result(
            exitCode: 0,
            fields: [
                JSONMember("event", .text("created")), JSONMember("kdf", result.kdf.protocolValue),
                JSONMember("record", .text(result.recordPath)),
            ]
        ).writer
        writer.appendSecret("recoveryKey", result.recoveryKeyText)
        return Reply(bytes: writer.finish())
    }

    /// A `derive` result: the key goes into the line from guarded memory (`DeriveWire`), and is wiped once sent.
    static func derived(_ result: consuming DerivedKey) -> Reply {
        let exitCode = Int(result.report.exitCode.rawValue)
        let fields = result.report.protocolFields
        guard let key = result.key.take() else { return Reply(.result(exitCode: exitCode, fields: fields)) }
        return Reply(bytes: DeriveWire.resultLine(exitCode: exitCode, fields: fields, key: key))
    }

    init(bytes: [UInt8]) { self.bytes = bytes }

    var line: [UInt8] { bytes }

    mutating func wipe() {
        TokenpinCore.wipe(&bytes)
    }
}
