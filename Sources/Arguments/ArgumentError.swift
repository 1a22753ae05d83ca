/// A command line that cannot be run as given: which rule it broke (`code`) and a message naming the problem.
///
/// Every usage error exits 2 in every tokenpin executable; `code` lets tests and callers tell them apart.
package struct ArgumentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The rule a command line broke.
    package enum Code: String, Sendable, Equatable, CaseIterable {
        /// A word where a subcommand belongs that names none.
        case unknownCommand
        /// An option no part of the program declares.
        case unknownOption
        /// An option of another subcommand, or of a subcommand given before it.
        case optionNotForCommand
        /// An option refused on purpose (tokenpin's `--pin`).
        case refusedOption
        /// A value option at the end of the command line.
        case missingValue
        /// `--name=` or `--name ''`.
        case emptyValue
        /// A value outside the option's allowed values.
        case invalidValue
        /// A flag given a value (`--json=yes`).
        case unexpectedValue
        /// A required option left out.
        case missingOption
        /// A required positional argument left out.
        case missingArgument
        /// A positional argument outside its allowed values.
        case invalidArgument
        /// More positional arguments than declared.
        case unexpectedArgument
    }

    /// Which rule was broken.
    package var code: Code
    /// The problem in one line, without "error:"; includes the suggestion when there is one.
    package var message: String
    /// The subcommand being parsed when it happened, for a usage hint.
    package var subcommand: String?
    /// The declared name closest to a mistyped one ("did you mean").
    package var suggestion: String?

    /// An error with `code` and `message`.
    package init(_ code: Code, _ message: String, subcommand: String? = nil, suggestion: String? = nil) {
        self.code = code
        self.message = message
        self.subcommand = subcommand
        self.suggestion = suggestion
    }

    /// The message, as `error:` lines show it.
    package var description: String { message }
}
