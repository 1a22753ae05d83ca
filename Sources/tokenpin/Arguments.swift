/// A command line that cannot be run as given; the message names the problem.
struct UsageError: Error {
    var message: String
    var command: String?
}

/// The options every command takes.
struct GlobalOptions {
    var store: String?
    var config: String?
    var json = false
    var noColor = false
    var pinStdin = false
    var quiet = false
    var reader: String?
    var serial: String?
    var user: String?
    var socket: String?
    var local = false
}

/// The command line split into global options, the command and its own arguments.
struct ParsedCommandLine {
    var global = GlobalOptions()
    var command: String?
    var arguments: [String] = []
    var options: [String: String] = [:]
    var flags: Set<String> = []
    var wantsHelp = false
    var wantsVersion = false
}

/// A small hand-written parser in the argument-parser style: global options anywhere, `--opt value` or
/// `--opt=value`, `--` ends options. PINs are never options: there is no flag that takes one.
enum ArgumentParser {
    /// Options that take a value, and the commands that accept them (nil: every command).
    static let valueOptions: [String: Set<String>?] = [
        "--store": nil, "--config": nil, "--reader": nil, "--serial": nil, "--user": nil, "--socket": nil,
        "--method": ["verify", "toggle"], "--mode": ["toggle"], "--recovery-key-file": ["enrol"], "--iterations": ["bench"],
    ]
    /// Flags, and the commands that accept them (nil: every command).
    static let flagOptions: [String: Set<String>?] = [
        "--json": nil, "--no-color": nil, "--pin-stdin": nil, "--quiet": nil, "-q": nil, "--local": nil,
        "--generate-key": ["toggle"], "--yes": ["toggle"], "--admin": ["token"], "--token": ["bench"],
    ]
    /// Options that look like they take a PIN: refused with a reason.
    static let forbidden = ["--pin", "--new-pin", "--recovery-key", "--card-pin", "--admin-pin"]

    static func parse(_ argv: [String]) throws(UsageError) -> ParsedCommandLine {
        var result = ParsedCommandLine()
        var index = 0
        var onlyPositionals = false
        while index < argv.count {
            let argument = argv[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                if result.command == nil {
                    result.command = argument
                } else {
                    result.arguments.append(argument)
                }
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            if forbidden.contains(name) {
                throw UsageError(message: "\(name) is not an option: PINs are never taken from the command line "
                    + "(other users can read it in /proc); type it at the prompt or use --pin-stdin", command: result.command)
            }
            switch name {
            case "-h", "--help":
                result.wantsHelp = true
                continue
            case "--version", "-V":
                result.wantsVersion = true
                continue
            default:
                break
            }
            if let scope = valueOptions[name] {
                try check(scope, name, result.command)
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < argv.count else {
                        throw UsageError(message: "missing value for '\(name)'", command: result.command)
                    }
                    value = argv[index]
                    index += 1
                }
                guard !value.isEmpty else { throw UsageError(message: "empty value for '\(name)'", command: result.command) }
                switch name {
                case "--store": result.global.store = value
                case "--config": result.global.config = value
                case "--reader": result.global.reader = value
                case "--serial":
                    let digits = value.filter { $0 != ":" }
                    guard [8, 12].contains(digits.count), digits.allSatisfy(\.isHexDigit) else {
                        throw UsageError(message: "--serial takes 8 hex digits, or 12 with the manufacturer "
                            + "(FFFE:0000AAAA), not '\(value)'", command: result.command)
                    }
                    result.global.serial = value
                case "--user": result.global.user = value
                case "--socket": result.global.socket = value
                default: result.options[name] = value
                }
            } else if let scope = flagOptions[name] {
                try check(scope, name, result.command)
                guard inlineValue == nil else {
                    throw UsageError(message: "'\(name)' takes no value", command: result.command)
                }
                switch name {
                case "--json": result.global.json = true
                case "--no-color": result.global.noColor = true
                case "--pin-stdin": result.global.pinStdin = true
                case "--quiet", "-q": result.global.quiet = true
                case "--local": result.global.local = true
                default: result.flags.insert(name)
                }
            } else {
                let known = Array(valueOptions.keys) + Array(flagOptions.keys) + ["--help", "--version"]
                throw UsageError(message: "unknown option '\(name)'" + Suggestion.didYouMean(name, among: known),
                                 command: result.command)
            }
        }
        return result
    }

    private static func check(_ scope: Set<String>??, _ name: String, _ command: String?) throws(UsageError) {
        guard let scope, let allowed = scope else { return }
        guard let command, allowed.contains(command) else {
            throw UsageError(message: "'\(name)' is not an option of \(command.map { "'\($0)'" } ?? "tokenpin")",
                             command: command)
        }
    }
}
