/// What a command line said, by declaration: the subcommand, its positional arguments, flags and values.
package struct ParsedArguments: Sendable, Equatable {
    /// The subcommand's declared name (an alias is resolved), or nil when none was given.
    package var subcommand: String?
    /// The positional arguments after the subcommand, in order.
    package var positionals: [String] = []
    /// Values by option name, in command-line order.
    var values: [String: [String]] = [:]
    /// Names of the flags given.
    var flags: Set<String> = []

    /// Nothing given: no subcommand, no arguments, no options.
    package init() {}

    /// Whether the flag (or value option) was given.
    package func isSet(_ option: Option) -> Bool {
        option.takesValue ? values[option.name] != nil : flags.contains(option.name)
    }

    /// The option's value; the last one when it was given more than once.
    package func value(_ option: Option) -> String? { values[option.name]?.last }

    /// Every value given for the option, in command-line order.
    package func values(_ option: Option) -> [String] { values[option.name] ?? [] }
}

extension Program {
    /// Parses `arguments` (without the program name) against the declarations.
    ///
    /// Options may come before or after the subcommand: the program's anywhere, a subcommand's after it. An
    /// option's value follows it (`--store dir`) or is joined to it (`--store=dir`); `--` ends the options, and
    /// `-` alone is an argument. Unless a flag that stops validation is given (`--help`), required options and
    /// arguments are then checked.
    package func parse(_ arguments: [String]) throws(ArgumentError) -> ParsedArguments {
        var result = ParsedArguments()
        var current: Subcommand?
        var onlyPositionals = false
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                if !subcommands.isEmpty && current == nil {
                    guard let subcommand = subcommand(named: argument) else {
                        throw unknownCommand(argument)
                    }
                    current = subcommand
                    result.subcommand = subcommand.name
                } else {
                    result.positionals.append(argument)
                }
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            try parseOption(argument, rest: arguments, at: &index, in: current, into: &result)
        }
        let given = options + (current?.options ?? [])
        if !given.contains(where: { $0.stopsValidation && result.isSet($0) }) {
            try validate(result, given: given, in: current)
        }
        return result
    }

    /// One option (`--name`, `--name=value`, `--name value`), its value taken from `arguments` at `index` when it
    /// is not joined to it: checked (refused, unknown, missing, empty or not among the allowed values) and recorded.
    private func parseOption(
        _ argument: String, rest arguments: [String], at index: inout Int, in current: Subcommand?,
        into result: inout ParsedArguments
    ) throws(ArgumentError) {
        var name = argument
        var inlineValue: String?
        if let equals = argument.firstIndex(of: "=") {
            name = String(argument[..<equals])
            inlineValue = String(argument[argument.index(after: equals)...])
        }
        if let refused = refusedOptions.first(where: { $0.names.contains(name) }) {
            throw ArgumentError(
                .refusedOption, "\(name) is not an option: \(refused.reason)", subcommand: current?.name)
        }
        let option = try lookUp(name, in: current)
        guard option.takesValue else {
            guard inlineValue == nil else {
                throw ArgumentError(.unexpectedValue, "'\(name)' takes no value", subcommand: current?.name)
            }
            result.flags.insert(option.name)
            return
        }
        let value: String
        if let inlineValue {
            value = inlineValue
        } else {
            guard index < arguments.count else {
                throw ArgumentError(.missingValue, "missing value for '\(name)'", subcommand: current?.name)
            }
            value = arguments[index]
            index += 1
        }
        guard !value.isEmpty else {
            throw ArgumentError(.emptyValue, "empty value for '\(name)'", subcommand: current?.name)
        }
        if let allowed = option.allowedValues, !allowed.contains(value) {
            let suggestion = Suggestion.closest(value, among: allowed)
            throw ArgumentError(
                .invalidValue,
                "\(name) must be \(Self.choice(allowed)), not '\(value)'" + Suggestion.phrase(suggestion),
                subcommand: current?.name, suggestion: suggestion)
        }
        result.values[option.name, default: []].append(value)
    }

    /// The option spelled `name` that may be given here, or the error saying why there is none.
    private func lookUp(_ name: String, in current: Subcommand?) throws(ArgumentError) -> Option {
        let here = options + (current?.options ?? [])
        if let option = here.first(where: { $0.names.contains(name) }) { return option }
        let everywhere = here + subcommands.flatMap(\.options)
        if everywhere.contains(where: { $0.names.contains(name) }) {
            let owner = current.map { "'\($0.name)'" } ?? self.name
            throw ArgumentError(
                .optionNotForCommand, "'\(name)' is not an option of \(owner)",
                subcommand: current?.name)
        }
        let suggestion =
            Suggestion.closest(name, among: here.flatMap(\.names))
            ?? Suggestion.closest(name, among: everywhere.flatMap(\.names))
        throw ArgumentError(
            .unknownOption, "unknown option '\(name)'" + Suggestion.phrase(suggestion),
            subcommand: current?.name, suggestion: suggestion)
    }

    private func unknownCommand(_ word: String) -> ArgumentError {
        let suggestion = Suggestion.closest(word, among: subcommands.flatMap { [$0.name] + $0.aliases })
        return ArgumentError(
            .unknownCommand, "unknown command '\(word)'" + Suggestion.phrase(suggestion),
            suggestion: suggestion)
    }

    /// Required options present, positional arguments as many as declared and each one allowed.
    private func validate(_ result: ParsedArguments, given: [Option], in current: Subcommand?)
        throws(ArgumentError)
    {
        if let missing = given.first(where: { $0.isRequired && !result.isSet($0) }) {
            throw ArgumentError(.missingOption, "\(missing.usage) is required", subcommand: current?.name)
        }
        // With subcommands declared and none given, the caller decides (tokenpin prints help).
        if !subcommands.isEmpty && current == nil { return }
        let declared = current?.arguments ?? arguments
        for (position, argument) in declared.enumerated() {
            guard position < result.positionals.count else {
                if argument.isOptional { break }
                throw ArgumentError(.missingArgument, "missing \(argument.label)", subcommand: current?.name)
            }
            let value = result.positionals[position]
            switch argument.values {
            case .any:
                break
            case .oneOf(let words):
                guard words.contains(value) else {
                    let suggestion = Suggestion.closest(value, among: words)
                    throw ArgumentError(
                        .invalidArgument,
                        "unknown \(argument.name) '\(value)'; expected \(Self.choice(words))"
                            + Suggestion.phrase(suggestion),
                        subcommand: current?.name, suggestion: suggestion)
                }
            case .subcommand:
                guard subcommand(named: value) != nil else {
                    var error = unknownCommand(value)
                    error.subcommand = current?.name
                    throw error
                }
            }
        }
        if result.positionals.count > declared.count {
            throw ArgumentError(
                .unexpectedArgument, "unexpected argument '\(result.positionals[declared.count])'",
                subcommand: current?.name)
        }
    }

    /// `a`, `a or b`, `one of a, b, c`.
    static func choice(_ words: [String]) -> String {
        switch words.count {
        case 0, 1: words.first ?? ""
        case 2: "\(words[0]) or \(words[1])"
        default: "one of " + words.joined(separator: ", ")
        }
    }
}
