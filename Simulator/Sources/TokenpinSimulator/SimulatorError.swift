/// Something the simulator itself could not do: a state file it cannot read or write, a pulled card.
///
/// Tests compare `code`; `detail` is for people and names the file or the reason.
package struct SimulatorError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    package enum Code: String, Sendable, Hashable {
        /// The state file exists but is not a valid card state (corrupt, truncated, wrong version).
        case corruptStateFile
        /// The state file or its directory could not be read.
        case unreadableStateFile
        /// The state file could not be written; the card keeps its previous state.
        case unwritableStateFile
        /// A command-line argument or fault description was invalid.
        case invalidArgument
    }

    /// What went wrong.
    package var code: Code
    /// A human description naming the file or the cause.
    package var detail: String

    /// Creates an error.
    package init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    package var description: String { detail }
}
