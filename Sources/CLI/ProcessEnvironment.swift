import TokenpinSystem

/// The process's environment as a dictionary, built once from `environ` the first time a command asks for it.
///
/// Not `ProcessInfo.environment`: that builds its dictionary anew on every use, about 0.4 million instructions
/// each (callgrind, a whole `tokenpin verify --method token`), and a command asked for it four times (the mode,
/// the context, the two consoles' colours). A name set twice keeps its first value, as `getenv` reads it.
enum ProcessEnvironment {
    static let current: [String: String] = dictionary(CurrentProcess.environment)

    /// `NAME=value` strings as a dictionary; an entry without `=` is no variable and is left out.
    static func dictionary(_ entries: [String]) -> [String: String] {
        var variables: [String: String] = [:]
        variables.reserveCapacity(entries.count)
        for entry in entries {
            guard let equals = entry.utf8.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = String(entry[..<equals])
            if variables[name] == nil { variables[name] = String(entry[entry.index(after: equals)...]) }
        }
        return variables
    }
}
