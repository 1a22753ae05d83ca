/// A command-line option: a flag, or an option that takes a value.
///
/// An option is declared once; the parser, the help text, the usage line and the shell completions all read
/// the same declaration.
public struct Option: Sendable, Equatable {
    /// What a shell offers to complete an option's value or an argument.
    public enum Completion: Sendable, Equatable {
        /// Nothing to offer.
        case none
        /// A file name.
        case file
        /// A directory name.
        case directory
        /// One of these words.
        case words([String])
    }

    /// The spellings, short ones first: `["-q", "--quiet"]`.
    public var names: [String]
    /// The value's name in help (`dir` shows as `<dir>`), or nil for a flag.
    public var valueName: String?
    /// The only values accepted, or nil for any non-empty value.
    public var allowedValues: [String]?
    /// One sentence for the help.
    public var help: String
    /// What shells complete the value with.
    public var completion: Completion
    /// Whether the command line must give it (checked unless a help or version flag is given).
    public var isRequired: Bool
    /// Whether it may be given more than once; the parser keeps every value either way.
    public var isRepeatable: Bool
    /// Whether it ends validation (`--help`, `--version`): with it given, missing arguments and required
    /// options are not errors, so `tokenpin toggle --help` shows help.
    public var stopsValidation: Bool

    /// A flag: present or absent, never with a value.
    public static func flag(_ names: String..., help: String, stopsValidation: Bool = false) -> Option {
        Option(
            names: names, valueName: nil, allowedValues: nil, help: help, completion: .none, isRequired: false,
            isRepeatable: false, stopsValidation: stopsValidation)
    }

    /// An option that takes a value, as `--name value` or `--name=value`.
    ///
    /// Without an explicit `completion`, allowed values complete as words, a value named `file` or `path` as a
    /// file and one named `dir` as a directory.
    public static func value(
        _ names: String..., valueName: String, allowedValues: [String]? = nil, completion: Completion? = nil,
        isRequired: Bool = false, isRepeatable: Bool = false, help: String
    ) -> Option {
        let inferred: Completion
        if let allowedValues {
            inferred = .words(allowedValues)
        } else if valueName == "file" || valueName == "path" {
            inferred = .file
        } else if valueName == "dir" {
            inferred = .directory
        } else {
            inferred = .none
        }
        return Option(
            names: names, valueName: valueName, allowedValues: allowedValues, help: help,
            completion: completion ?? inferred, isRequired: isRequired, isRepeatable: isRepeatable,
            stopsValidation: false)
    }

    /// The name results are kept under and usage lines show: the last long spelling, else the last one.
    public var name: String { names.last { $0.hasPrefix("--") } ?? names.last ?? "" }

    /// Whether it takes a value.
    public var takesValue: Bool { valueName != nil }

    /// The value as help shows it: `<dir>`, or the allowed values `pin|token`.
    public var valueLabel: String? {
        guard let valueName else { return nil }
        return allowedValues.map { $0.joined(separator: "|") } ?? "<\(valueName)>"
    }

    /// The help row's left column: `-q, --quiet`, `--store <dir>`, `--method pin|token`.
    public var label: String {
        names.joined(separator: ", ") + (valueLabel.map { " " + $0 } ?? "")
    }

    /// The option in a usage line: `[--method pin|token]`, `--state <file>`, `[--fault <rule> ...]`.
    public var usage: String {
        let text = name + (valueLabel.map { " " + $0 } ?? "") + (isRepeatable ? " ..." : "")
        return isRequired ? text : "[\(text)]"
    }
}

/// An option that does not exist on purpose, refused with its reason (tokenpin's `--pin`: no PIN on argv).
public struct RefusedOption: Sendable, Equatable {
    /// The spellings refused.
    public var names: [String]
    /// Why, as the rest of the sentence "NAME is not an option: REASON".
    public var reason: String

    /// Refuses `names` with `reason`.
    public init(_ names: [String], reason: String) {
        self.names = names
        self.reason = reason
    }
}

/// A positional argument of a subcommand (or of a program without subcommands).
public struct Positional: Sendable, Equatable {
    /// The values it accepts.
    public enum Values: Sendable, Equatable {
        /// Any value; `completion` is what shells offer.
        case any(completion: Option.Completion)
        /// One of these words.
        case oneOf([String])
        /// The name of one of the program's subcommands (`help <command>`).
        case subcommand
    }

    /// The argument's name in messages: `unknown type 'face'`.
    public var name: String
    /// The values it accepts.
    public var values: Values
    /// Whether it may be left out (only trailing arguments may be).
    public var isOptional: Bool
    /// How usage lines and the "missing" message show it; by default the words `on|off` or `<name>`.
    public var label: String

    /// Declares an argument; `label` overrides how usage shows it (`<type>` rather than `pin|token`).
    public init(
        _ name: String, values: Values = .any(completion: .none), isOptional: Bool = false,
        label: String? = nil
    ) {
        self.name = name
        self.values = values
        self.isOptional = isOptional
        if let label {
            self.label = label
        } else if case .oneOf(let words) = values {
            self.label = words.joined(separator: "|")
        } else {
            self.label = "<\(name)>"
        }
    }

    /// The argument in a usage line: `<type>`, `on|off`, `[<command>]`.
    public var usage: String { isOptional ? "[\(label)]" : label }
}

/// A subcommand: its name, help, arguments and the options only it takes.
public struct Subcommand: Sendable, Equatable {
    /// The name the command line gives.
    public var name: String
    /// Other spellings accepted for it (`enroll`); results carry `name`.
    public var aliases: [String]
    /// One sentence ending in a period.
    public var abstract: String
    /// Further paragraphs for `help <name>`.
    public var discussion: String?
    /// Its positional arguments, in order.
    public var arguments: [Positional]
    /// The options only it takes (the program's options are taken everywhere).
    public var options: [Option]

    /// Declares a subcommand.
    public init(
        _ name: String, aliases: [String] = [], abstract: String, discussion: String? = nil,
        arguments: [Positional] = [], options: [Option] = []
    ) {
        self.name = name
        self.aliases = aliases
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
        self.options = options
    }
}

/// A section of the main help after the options and subcommands: rows (`EXIT CODES:`) or a paragraph.
public struct HelpSection: Sendable {
    /// The heading, without the colon.
    public var title: String
    /// Two-column rows, shown like options.
    public var rows: [(String, String)]
    /// A paragraph shown after the heading on the same line, when there are no rows.
    public var text: String?

    /// A section of two-column rows.
    public init(_ title: String, rows: [(String, String)]) {
        self.title = title
        self.rows = rows
        self.text = nil
    }

    /// A section of one paragraph.
    public init(_ title: String, text: String) {
        self.title = title
        self.rows = []
        self.text = text
    }
}

/// A whole command-line interface: the program's options, its subcommands (or its own arguments) and help.
public struct Program: Sendable {
    /// The executable's name, as usage lines show it.
    public var name: String
    /// One sentence for `OVERVIEW:`.
    public var overview: String
    /// Paragraphs after the overview.
    public var discussion: String?
    /// Options taken before or after any subcommand.
    public var options: [Option]
    /// Subcommands; when there are none, `arguments` are the program's own.
    public var subcommands: [Subcommand]
    /// Positional arguments of a program without subcommands.
    public var arguments: [Positional]
    /// Spellings refused with a reason.
    public var refusedOptions: [RefusedOption]
    /// Sections of the main help after the options and subcommands.
    public var sections: [HelpSection]

    /// Declares a program.
    public init(
        _ name: String, overview: String, discussion: String? = nil, options: [Option],
        subcommands: [Subcommand] = [], arguments: [Positional] = [], refusedOptions: [RefusedOption] = [],
        sections: [HelpSection] = []
    ) {
        self.name = name
        self.overview = overview
        self.discussion = discussion
        self.options = options
        self.subcommands = subcommands
        self.arguments = arguments
        self.refusedOptions = refusedOptions
        self.sections = sections
    }

    /// The subcommand called `name` or one of its aliases.
    public func subcommand(named name: String) -> Subcommand? {
        subcommands.first { $0.name == name || $0.aliases.contains(name) }
    }
}
