import Foundation
import Testing
import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// Numbers on the wire at and past their bounds, in both directions: every one is a `bad-field` error naming the
/// field (or a dropped event), never a trap and never a value used out of range.
@Suite struct WireNumberTests {
    static let hostile: [Int64] = [.max, .min, -1]

    func line(_ members: [(String, JSONValue)]) -> [UInt8] {
        JSONValue.object(members.map { JSONMember($0.0, $0.1) }).serialized
    }

    func expectBadField(_ field: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("`\(field)` out of range was accepted")
        } catch let error as ProtocolError {
            #expect(error.code == .badField, "\(error)")
            #expect(error.detail.contains("`\(field)`"), "\(error.detail)")
        } catch {
            Issue.record("not a protocol error: \(error)")
        }
    }

    @Test(arguments: hostile + [0, 6])
    func newPINAttemptsOutOfRange(_ attempts: Int64) {
        let request = line([
            ("v", .int(1)), ("type", .text("request")), ("op", .text("enrol")),
            ("newPINAttempts", .integer(attempts)),
        ])
        expectBadField("newPINAttempts") { _ = try ClientMessage.parse(request) }
    }

    @Test func numbersBeyond64BitsAreMalformed() {
        let text = #"{"v":1,"type":"request","op":"enrol","newPINAttempts":99999999999999999999}"#
        #expect {
            try ClientMessage.parse(Array(text.utf8))
        } throws: { error in
            (error as? ProtocolError)?.code == .malformed
        }
    }

    @Test(arguments: hostile + [256])
    func exitCodeOutOfRange(_ code: Int64) {
        for type in ["result", "error"] {
            let message = line([
                ("v", .int(1)), ("type", .text(type)), ("code", .text("input")), ("message", .text("m")),
                ("exitCode", .integer(code)),
            ])
            expectBadField("exitCode") { _ = try ServerMessage.parse(message) }
        }
    }

    @Test(arguments: hostile + [256])
    func promptTriesLeftOutOfRange(_ tries: Int64) {
        let message = line([
            ("v", .int(1)), ("type", .text("prompt")), ("prompt", .text("card-pin")),
            ("triesLeft", .integer(tries)),
        ])
        expectBadField("triesLeft") { _ = try ServerMessage.parse(message) }
    }

    static let reportFields: [(field: String, bad: [Int64])] = [
        ("triesLeft", hostile + [256]), ("max", hostile + [0, 101]), ("remaining", hostile + [6]),
        ("failures", hostile + [Int64(RetryCounter.maximumFailureCount) + 1]),
        ("recoveryFailures", hostile + [Int64(RetryCounter.maximumFailureCount) + 1]),
        ("lockedAt", [.max, .min, 253_402_300_800_000]), ("lastAttemptAt", [.max, .min]),
        ("kdfNanoseconds", [.min, -1]),
    ]

    @Test func verifyReportNumbersOutOfRange() {
        for (field, values) in Self.reportFields {
            for value in values {
                var fields = [
                    JSONMember("outcome", .text("rejected")), JSONMember("max", .int(5)),
                    JSONMember("remaining", .int(4)),
                ]
                // Version 1's `triesLeft` is read only when `remaining` is absent (a version 1 result without a counter).
                fields.removeAll { $0.key == field || (field == "triesLeft" && $0.key != "outcome") }
                fields.append(JSONMember(field, .integer(value)))
                expectBadField(field) { _ = try VerifyReport(protocolFields: fields) }
            }
        }
        for value in Self.hostile + [Int64(RetryCounter.maximumDelaySeconds) + 1] {
            let fields = [JSONMember("outcome", .text("delayed")), JSONMember("retryAfter", .integer(value))]
            expectBadField("retryAfter") { _ = try VerifyReport(protocolFields: fields) }
        }
    }

    @Test func theFarthestDatesRoundTripWithoutTrapping() throws {
        for milliseconds: Int64 in [253_402_300_799_999, -253_402_300_799_999, 0] {
            let fields = [
                JSONMember("outcome", .text("locked")), JSONMember("max", .int(5)), JSONMember("remaining", .int(0)),
                JSONMember("lockedAt", .integer(milliseconds)), JSONMember("lastAttemptAt", .integer(milliseconds)),
            ]
            let report = try VerifyReport(protocolFields: fields)
            #expect(try VerifyReport(protocolFields: report.protocolFields) == report)
        }
        // Dates no message carries still encode: clamped to the bound, or null for NaN.
        var counter = RetryCounter(max: 5)
        for date in [
            Date.distantFuture.addingTimeInterval(1e300), Date(timeIntervalSince1970: -.infinity),
            Date(timeIntervalSince1970: .nan),
        ] {
            counter.lockedAt = date
            _ = VerifyReport(outcome: .locked, counter: counter).protocolFields
        }
    }

    @Test func statusNumbersOutOfRange() {
        func status(_ extra: [JSONMember]) -> JSONValue {
            var members = [
                JSONMember("user", .text("alice")), JSONMember("record", .text("/r")),
                JSONMember("enrolled", .bool(true)), JSONMember("types", .array([])),
                JSONMember("max", .int(5)),
            ]
            for member in extra { members.removeAll { $0.key == member.key } }
            return .object(members + extra)
        }
        for (field, values) in [
            ("remaining", Self.hostile + [6]), ("max", Self.hostile + [0, 101]),
            ("delay", Self.hostile + [86_401]), ("failures", Self.hostile),
            ("lockedAt", [Int64.max, .min]),
        ] {
            for value in values {
                expectBadField(field) {
                    _ = try StatusReport(protocolValue: status([JSONMember(field, .integer(value))]))
                }
            }
        }
        let heavy = JSONValue.object([
            JSONMember("algorithm", .text("argon2id13")), JSONMember("memoryKiB", .integer(.max)),
            JSONMember("passes", .int(3)),
            JSONMember("salt", .text(Base64.encode(Array(repeating: 1, count: 16)))),
        ])
        expectBadField("kdf") { _ = try StatusReport(protocolValue: status([JSONMember("kdf", heavy)])) }
        let readers = JSONValue.array([
            .object([
                JSONMember("name", .text("r")), JSONMember("cardPresent", .bool(true)),
                JSONMember("cardPINTriesLeft", .integer(.max)),
            ])
        ])
        let token = JSONValue.object([JSONMember("readers", readers)])
        expectBadField("cardPINTriesLeft") { _ = try StatusReport(protocolValue: status([JSONMember("token", token)])) }
    }

    @Test func eventsWithNumbersOutOfRangeAreDropped() {
        for value in Self.hostile {
            #expect(Event(name: "wrongPIN", fields: [JSONMember("remaining", .integer(value))]) == nil)
            #expect(Event(name: "delayed", fields: [JSONMember("seconds", .integer(value))]) == nil)
        }
        #expect(Event(name: "wrongPIN", fields: [JSONMember("remaining", .int(256))]) == nil)
        #expect(
            Event(name: "delayed", fields: [JSONMember("seconds", .int(RetryCounter.maximumDelaySeconds + 1))]) == nil)
        #expect(Event(name: "delayed", fields: [JSONMember("seconds", .int(30))]) == .delayed(seconds: 30))
    }
}
