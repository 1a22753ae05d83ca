// Fuzz target for the record decoder and its structural check (`RecordStore.decode`, `structuralProblem`): the
// path every record takes from disk and from `tokenpin import` through the daemon, so its bytes are hostile.
// Nothing may trap; whatever decodes passes the structural check and encodes to bytes that decode to the same
// record. Built by tests/service/fuzz.sh against TokenpinCore compiled with `-sanitize=fuzzer,address`.
import Foundation
import TokenpinCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecordDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    guard let record = try? RecordStore.decode(bytes, path: "fuzz.json") else { return 0 }
    precondition(record.structuralProblem == nil, "a decoded record fails the structural check")
    guard let encoded = try? RecordStore.encode(record) else { preconditionFailure("a decoded record does not encode") }
    let again = try? RecordStore.decode(encoded, path: "fuzz.json", user: record.user)
    precondition(again == record, "the record changed through encode and decode")
    return 0
}
