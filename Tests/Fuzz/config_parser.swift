// Fuzz target for the configuration parser (`Configuration.apply(text:file:)`): drop-ins and the user's own
// file are read by the CLI and the daemon, so a line may hold anything. Nothing may trap; a file either applies
// or is refused with a ConfigError naming a line. Built by Tests/Fuzz/fuzz.sh against TokenpinCore.
import TokenpinCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfigurationParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    // The loader refuses a file that is not UTF-8 before parsing; decode the same way.
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    var configuration = Configuration()
    do {
        try configuration.apply(text: text, file: "fuzz.conf")
        precondition(
            configuration.policy.minLength <= configuration.policy.maxLength, "an inverted length range applied")
    } catch {
        precondition(error.line >= 0, "a ConfigError with a negative line")
    }
    return 0
}
