import Foundation

// tokenpin-registries KIND OUTPUT FOLDER FILE...: writes OUTPUT, the Swift list of what the files in FOLDER declare,
// one each, named after the file (Sources/Protocol/Operations/CardUnblock.swift declares the operation
// `CardUnblock`; Sources/CLI/Commands/Verify.swift declares `VerifyCommand`). Run by the Registries build plugin for
// every Swift file under FOLDER; the build fails with the reason when a file is in a subfolder or its name is not a
// type's, and the generated lines name each file, so a file that does not declare its type is named in the
// compiler's error. One file declares one operation or command: a second type in it is not listed. OUTPUT is
// rewritten only when its text changes.

/// What KIND lists: the operations of TokenpinProtocol, or the commands of TokenpinCLI.
enum Kind: String {
    case operations, commands

    /// The type a file named `name` declares.
    func typeName(_ name: String) -> String { self == .operations ? name : name + "Command" }
}

/// Why a file cannot be listed, as the build shows it.
struct Refusal: Error {
    let message: String
}

/// What a file in `folder` declares: its name without `.swift`, a Swift type name.
func declaredName(_ path: String, kind: Kind, folder: String) throws(Refusal) -> String {
    let parts = path.split(separator: "/")
    guard let file = parts.last, file.hasSuffix(".swift") else { throw Refusal(message: "\(path): not a Swift file") }
    guard parts.count >= 2, "/" + parts.dropLast().joined(separator: "/") == folder else {
        throw Refusal(message: "\(path): put it directly in \(folder), where each file is listed; subfolders are not")
    }
    let name = String(file.dropLast(".swift".count))
    let example =
        kind == .operations ? "CardUnblock.swift declares `CardUnblock`" : "Verify.swift declares `VerifyCommand`"
    guard let first = name.first, first.isASCII, first.isUppercase,
        name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
    else {
        throw Refusal(message: "\(path): a file here is named after the type it declares (\(example)), not '\(file)'")
    }
    return name
}

/// `CardUnblock` → `cardUnblock`, `PINCheck` → `pinCheck`, `PIN` → `pin`, `ATR2` → `atr2`: the enum case of an
/// operation. A run of capitals at the start is one word, but for its last letter when a lowercase letter follows
/// (it begins the next word).
func caseName(_ type: String) -> String {
    let run = type.prefix { $0.isUppercase }
    let rest = type.dropFirst(run.count)
    let lowered =
        run.count > 1 && rest.first?.isLowercase == true
        ? run.dropLast().lowercased() + String(run.last!) + rest
        : run.lowercased() + rest
    return swiftKeywords.contains(lowered) ? "`\(lowered)`" : lowered
}

/// The words a case name cannot be without backquotes (the Swift book's keywords used in declarations, statements
/// and expressions).
let swiftKeywords: Set<String> = [
    "associatedtype", "borrowing", "class", "consuming", "deinit", "enum", "extension", "fileprivate", "func",
    "import", "init", "inout", "internal", "let", "nonisolated", "open", "operator", "private", "precedencegroup",
    "protocol", "public", "rethrows", "static", "struct", "subscript", "typealias", "var", "break", "case", "catch",
    "continue", "default", "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return",
    "throw", "switch", "where", "while", "Any", "as", "await", "false", "is", "nil", "self", "Self", "super",
    "throws", "true", "try",
]

func operations(_ names: [String]) -> String {
    """
    /// An operation a client asks for, with its typed values: one case per file in Sources/Protocol/Operations.
    package enum Operation: Sendable, Equatable {
    \(names.map { "    /// Operations/\($0).swift\n    case \(caseName($0))(\($0))" }.joined(separator: "\n"))

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
    \(names.map { "        \($0)Command.self,  // Commands/\($0).swift" }.joined(separator: "\n"))
        ]
    }

    """
}

/// Prints `message` on standard error and ends with `status`.
func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(status)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 3, let kind = Kind(rawValue: arguments[0]) else {
    fail("usage: tokenpin-registries operations|commands OUTPUT FOLDER FILE...", status: 2)
}
let (output, folder) = (arguments[1], arguments[2])
var names: [String] = []
for path in arguments.dropFirst(3) {
    do {
        names.append(try declaredName(path, kind: kind, folder: folder))
    } catch {
        fail("error: " + error.message)
    }
}
names.sort()
let cases = Dictionary(grouping: names, by: caseName).filter { $0.value.count > 1 }
if let clash = cases.first {
    fail("error: \(clash.value.joined(separator: " and ")) in \(folder) would both be `\(clash.key)`; rename one")
}
let body = kind == .operations ? operations(names) : commands(names)
let text = "// Written by tokenpin-registries (Plugins/Registries) at build time; not kept in the checkout.\n\n" + body
if (try? String(contentsOfFile: output, encoding: .utf8)) != text {
    do {
        try text.write(toFile: output, atomically: true, encoding: .utf8)
    } catch {
        fail("error: cannot write \(output): \(error)")
    }
}
