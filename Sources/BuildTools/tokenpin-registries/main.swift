import Foundation

// tokenpin-registries KIND OUTPUT FILE...: writes OUTPUT, the Swift list of what the files declare, one each, named
// after the file (Sources/Protocol/Operations/CardUnblock.swift declares the operation `CardUnblock`;
// Sources/CLI/Commands/Verify.swift declares `VerifyCommand`). Run by the Registries build plugin; the build fails
// with the reason when a file's name is not a type's.

/// What a file in the folder declares: its name without `.swift`, a Swift type name.
func declaredName(_ path: String) -> String? {
    guard let file = path.split(separator: "/").last, file.hasSuffix(".swift") else { return nil }
    let name = file.dropLast(".swift".count)
    guard let first = name.first, first.isASCII, first.isUppercase,
        name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
    else { return nil }
    return String(name)
}

/// `CardUnblock` → `cardUnblock`, `PIN` → `pin`: the enum case of an operation.
func caseName(_ type: String) -> String {
    let leadingCapitals = type.prefix { $0.isUppercase }
    // All but the last of a run of capitals belong to the first word (`PINCheck` → `pinCheck`), unless the run is
    // the whole name.
    let lowered =
        leadingCapitals.count > 1 && leadingCapitals.count < type.count
        ? leadingCapitals.dropLast().lowercased() + type.dropFirst(leadingCapitals.count - 1)
        : type.prefix(1).lowercased() + type.dropFirst()
    return swiftKeywords.contains(lowered) ? "`\(lowered)`" : lowered
}

/// The words a case name cannot be without backquotes.
let swiftKeywords: Set<String> = [
    "as", "break", "case", "catch", "class", "continue", "default", "defer", "do", "else", "enum", "extension",
    "fallthrough", "false", "for", "func", "guard", "if", "import", "in", "init", "internal", "is", "let", "nil",
    "operator", "private", "protocol", "public", "repeat", "return", "self", "static", "struct", "subscript",
    "super", "switch", "throw", "throws", "true", "try", "typealias", "var", "where", "while",
]

func operations(_ names: [String]) -> String {
    """
    /// An operation a client asks for, with its typed values: one case per file in Sources/Protocol/Operations.
    package enum Operation: Sendable, Equatable {
    \(names.map { "    case \(caseName($0))(\($0))" }.joined(separator: "\n"))

        /// The operation's values, as the wire sees them.
        var values: any WireOperation {
            switch self {
    \(names.map { "        case .\(caseName($0))(let values): values" }.joined(separator: "\n"))
            }
        }

        /// Every operation.
        static let all: [Entry] = [
    \(names.map { "        Entry(\($0).self, Operation.\(caseName($0))),"}.joined(separator: "\n"))
        ]
    }

    """
}

/// TokenpinCLI's list of its commands, one `<Name>Command` type per file, in file-name order (help orders them by
/// their groups).
func commands(_ names: [String]) -> String {
    """
    extension Commands {
        /// Every command: one per file in Sources/CLI/Commands, in file-name order.
        static let all: [any DeclaredCommand.Type] = [
    \(names.map { "        \($0)Command.self," }.joined(separator: "\n"))
        ]
    }

    """
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2, arguments[0] == "operations" || arguments[0] == "commands" else {
    print("usage: tokenpin-registries operations|commands OUTPUT FILE...")
    exit(2)
}
var names: [String] = []
for path in arguments.dropFirst(2) {
    guard let name = declaredName(path) else {
        print("error: \(path): a file here is named after the type it declares (CardUnblock.swift), not '\(path)'")
        exit(1)
    }
    names.append(name)
}
let body = arguments[0] == "operations" ? operations(names) : commands(names)
let text = "// Written by tokenpin-registries (Plugins/Registries) at build time; not kept in the checkout.\n\n" + body
do {
    try text.write(toFile: arguments[1], atomically: true, encoding: .utf8)
} catch {
    print("error: cannot write \(arguments[1]): \(error)")
    exit(1)
}
