/// A command-line option: a flag, or an option that takes a value.
///
/// An option is declared once; the parser, the help text, the usage line and the shell completions all read
/// the same declaration.
package struct Option: Sendable, Equatable {
    /// What a shell offers to complete an option's value or an argument.
    package enum Completion: Sendable, Equatable {
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
    package var names: [String]
    /// The value's name in help (`dir` shows as `<dir>`), or nil for a flag.
    package var valueName: String?
    /// The only values accepted, or nil for any non-empty value.
    package var allowedValues: [String]?
    /// One sentence for the help.
    package var help: String
    /// What shells complete the value with.
    package var completion: Completion
    /// Whether the command line must give it (checked unless a help or version flag is given).
    package var isRequired: Bool
    /// Whether it may be given more than once; the parser keeps every value either way.
    package var isRepeatable: Bool
    /// Whether it ends validation (`--help`, `--version`): with it given, missing arguments and required
    /// options are not errors, so `tokenpin toggle --help` shows help.
    package var stopsValidation: Bool

    /// A flag: present or absent, never with a value.
    package static func flag(_ names: String..., help: String, stopsValidation: Bool = false) -> Option {
        Option(
            names: names, valueName: nil, allowedValues: nil, help: help, completion: .none, isRequired: false,
            isRepeatable: false, stopsValidation: stopsValidation)
    }

    /// An option that takes a value, as `--name value` or `--name=value`.
    ///
    /// Without an explicit `completion`, allowed values complete as words, a value named `file` or `path` as a
    /// file and one named `dir` as a directory.
    package static func value(
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
    package var name: String { names.last { $0.hasPrefix("--") } ?? names.last ?? "" }

    /// Whether it takes a value.
    package var takesValue: Bool { valueName != nil }

    /// The value as help shows it: `<dir>`, or the allowed values `pin|token`.
    package var valueLabel: String? {
        guard let valueName else { return nil }
        return allowedValues.map { $0.joined(separator: "|") } ?? "<\(valueName)>"
    }

    /// The help row's left column: `-q, --quiet`, `--store <dir>`, `--method pin|token`.
    package var label: String {
        names.joined(separator: ", ") + (valueLabel.map { " " + $0 } ?? "")
    }

    /// The option in a usage line: `[--method pin|token]`, `--state <file>`, `[--fault <rule> ...]`.
    package var usage: String {
        let text = name + (valueLabel.map { " " + $0 } ?? "") + (isRepeatable ? " ..." : "")
        return isRequired ? text : "[\(text)]"
    }
}

/// An option that does not exist on purpose, refused with its reason (tokenpin's `--pin`: no PIN on argv).
package struct RefusedOption: Sendable, Equatable {
    /// The spellings refused.
    package var names: [String]
    /// Why, as the rest of the sentence "NAME is not an option: REASON".
    package var reason: String

    /// Refuses `names` with `reason`.
    package init(_ names: [String], reason: String) {
        self.names = names
        self.reason = reason
    }
}

/// A positional argument of a subcommand (or of a program without subcommands).
package struct Positional: Sendable, Equatable {
    /// The values it accepts.
    package enum Values: Sendable, Equatable {
        /// Any value; `completion` is what shells offer.
        case any(completion: Option.Completion)
        /// One of these words.
        case oneOf([String])
        /// The name of one of the program's subcommands (`help <command>`).
        case subcommand
    }

    /// The argument's name in messages: `unknown type 'face'`.
    package var name: String
    /// The values it accepts.
    package var values: Values
    /// Whether it may be left out (only trailing arguments may be).
    package var isOptional: Bool
    /// The label the declaration gave, if any.
    private var givenLabel: String?

    /// How usage lines and the "missing" message show it; by default the words `on|off` or `<name>`. Made when
    /// shown, not when declared: every command line declares all of them and most never show one.
    package var label: String {
        if let givenLabel { return givenLabel }
        if case .oneOf(let words) = values { return words.joined(separator: "|") }
        return "<\(name)>"
    }

    /// Declares an argument; `label` overrides how usage shows it (`<type>` rather than `pin|token`).
    package init(
        _ name: String, values: Values = .any(completion: .none), isOptional: Bool = false,
        label: String? = nil
    ) {
        self.name = name
        self.values = values
        self.isOptional = isOptional
        givenLabel = label
    }

    /// The argument in a usage line: `<type>`, `on|off`, `[<command>]`.
    package var usage: String { isOptional ? "[\(label)]" : label }
}

/// A subcommand: its name, help, arguments and the options only it takes.
package struct Subcommand: Sendable, Equatable {
    /// The name the command line gives.
    package var name: String
    /// Other spellings accepted for it (`enroll`); results carry `name`.
    package var aliases: [String]
    /// The group the main help lists it under, as `GROUP SUBCOMMANDS:` (one of the program's `groups`, as
    /// swift-argument-parser heads its command groups), or nil: under `SUBCOMMANDS:`.
    package var group: String?
    /// One sentence ending in a period.
    package var abstract: String
    /// Further paragraphs for `help <name>`.
    package var discussion: String?
    /// Its positional arguments, in order.
    package var arguments: [Positional]
    /// The options only it takes (the program's options are taken everywhere).
    package var options: [Option]

    /// Declares a subcommand.
    package init(
        _ name: String, aliases: [String] = [], group: String? = nil, abstract: String, discussion: String? = nil,
        arguments: [Positional] = [], options: [Option] = []
    ) {
        self.name = name
        self.aliases = aliases
        self.group = group
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
        self.options = options
    }
}

/// A section of the main help after the options and subcommands: rows (`EXIT CODES:`) or a paragraph.
package struct HelpSection: Sendable {
    /// The heading, without the colon.
    package var title: String
    /// Two-column rows, shown like options.
    package var rows: [(String, String)]
    /// A paragraph shown after the heading on the same line, when there are no rows.
    package var text: String?

    /// A section of two-column rows.
    package init(_ title: String, rows: [(String, String)]) {
        self.title = title
        self.rows = rows
        self.text = nil
    }

    /// A section of one paragraph.
    package init(_ title: String, text: String) {
        self.title = title
        self.rows = []
        self.text = text
    }
}

/// A whole command-line interface: the program's options, its subcommands (or its own arguments) and help.
package struct Program: Sendable {
    /// The executable's name, as usage lines show it.
    package var name: String
    /// One sentence for `OVERVIEW:`.
    package var overview: String
    /// Paragraphs after the overview.
    package var discussion: String?
    /// Options taken before or after any subcommand.
    package var options: [Option]
    /// Subcommands; when there are none, `arguments` are the program's own.
    package var subcommands: [Subcommand]
    /// The headings subcommands are grouped under in the main help, in the order it shows them (`Subcommand.group`
    /// names one); the program's own words, none of the library's.
    package var groups: [String]
    /// Positional arguments of a program without subcommands.
    package var arguments: [Positional]
    /// Spellings refused with a reason.
    package var refusedOptions: [RefusedOption]
    /// Sections of the main help after the options and subcommands.
    package var sections: [HelpSection]

    /// Declares a program.
    package init(
        _ name: String, overview: String, discussion: String? = nil, options: [Option],
        subcommands: [Subcommand] = [], groups: [String] = [], arguments: [Positional] = [],
        refusedOptions: [RefusedOption] = [], sections: [HelpSection] = []
    ) {
        self.name = name
        self.overview = overview
        self.discussion = discussion
        self.options = options
        self.subcommands = subcommands
        self.groups = groups
        self.arguments = arguments
        self.refusedOptions = refusedOptions
        self.sections = sections
    }

    /// The subcommand called `name` or one of its aliases.
    package func subcommand(named name: String) -> Subcommand? {
        subcommands.first { $0.name == name || $0.aliases.contains(name) }
    }

    /// The subcommands as the main help lists them: those without a group first, in declaration order (`title`
    /// nil: `SUBCOMMANDS:`), then one list per group in `groups` order, alphabetical within it. A group that
    /// `groups` does not name follows those it does, in the order subcommands first name it: none is left out.
    package var subcommandGroups: [(title: String?, subcommands: [Subcommand])] {
        let ungrouped = subcommands.filter { $0.group == nil }
        var titles = groups
        for subcommand in subcommands {
            if let group = subcommand.group, !titles.contains(group) { titles.append(group) }
        }
        let grouped = titles.map { title in
            (title: Optional(title), subcommands: subcommands.filter { $0.group == title }.sorted { $0.name < $1.name })
        }
        return ([(title: nil, subcommands: ungrouped)] + grouped).filter { !$0.subcommands.isEmpty }
    }
}
