// Fuzz target for the record decoder and its structural check (`RecordStore.decode`, `structuralProblem`): the
// path every record takes from disk and from `tokenpin import` through the daemon, so its bytes are hostile.
// Nothing may trap; whatever decodes passes the structural check, and saving and loading it is a fixed point; and a
// record that passed the check survives what the service then does to any record it loaded (the
// failure delay for `status` and before a verification, counting an attempt, a wrong recovery key, a success).
// Built by Tests/Fuzz/fuzz.sh against TokenpinCore compiled with `-sanitize=fuzzer,address`.
import Foundation
import TokenpinCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecordDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    guard let record = try? RecordStore.decode(bytes, path: "fuzz.json") else { return 0 }
    precondition(record.structuralProblem == nil, "a decoded record fails the structural check")
    // A save and a load are a fixed point: what tokenpin writes, it reads back and writes again byte for byte. (The
    // first decode may normalise: the date decoder accepts `15:33:4.9Z`, whose fraction the encoder drops.)
    guard let encoded = try? RecordStore.encode(record) else { preconditionFailure("a decoded record does not encode") }
    guard let again = try? RecordStore.decode(encoded, path: "fuzz.json", user: record.user) else {
        preconditionFailure("a record tokenpin wrote does not decode")
    }
    precondition((try? RecordStore.encode(again)) == encoded, "a saved record changes when loaded and saved again")

    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let schedule = [0, 0, 0, 30, 300]  // the default fail-delay
    var counter = record.counter
    _ = counter.delay(at: now, schedule: schedule)
    _ = counter.isLocked
    counter.consumeAttempt(at: now)
    _ = counter.delay(at: now, schedule: schedule)
    countWrongRecoveryKey(&counter)
    counter.restore()
    _ = record.tokenEnabled
    for slot in record.slots { _ = slot.isWellFormed }
    return 0
}

/// What `PINService.reset` does to the counter of a loaded record before it checks a recovery key; a function of its
/// own so that a trap here names it.
@inline(never)
func countWrongRecoveryKey(_ counter: inout RetryCounter) {
    counter.countRecoveryFailure()
}
