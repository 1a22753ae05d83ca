import FoundationEssentials
import TokenpinCore
import TokenpinSystem

/// ANSI colours per the appearance settings, or none.
package struct Style {
    var enabled: Bool
    var appearance: Appearance

    /// Colours are on with `color = always`, or with `auto` when `fd` is a terminal, `NO_COLOR` is unset and
    /// `TERM` is not `dumb`; `--no-color` always wins.
    static func resolve(
        appearance: Appearance, noColor: Bool, fd: Int32,
        environment: [String: String] = ProcessEnvironment.current
    ) -> Style {
        var enabled: Bool
        switch appearance.color {
        case .always: enabled = true
        case .never: enabled = false
        case .auto:
            enabled =
                FileDescriptor.withBorrowed(fd, { $0.isTerminal }) && environment["NO_COLOR"].map(\.isEmpty) ?? true
                && environment["TERM"] != "dumb"
        }
        if noColor { enabled = false }
        return Style(enabled: enabled, appearance: appearance)
    }

    func paint(_ text: String, _ color: String) -> String {
        guard enabled, let colour = TextColour(name: color) else { return text }
        return "\u{1B}[\(Self.sgr(colour))m\(text)\u{1B}[0m"
    }

    /// The ANSI SGR parameter of a colour.
    static func sgr(_ colour: TextColour) -> String {
        let basics: [TextColour.BasicColour] = [.black, .red, .green, .yellow, .blue, .magenta, .cyan, .white]
        switch colour {
        case .basic(.default): return "39"
        case .basic(let basic): return String(30 + (basics.firstIndex(of: basic) ?? 9))
        case .bright(let basic): return String(90 + (basics.firstIndex(of: basic) ?? 9))
        case .attribute(.bold): return "1"
        case .attribute(.dim): return "2"
        case .attribute(.underline): return "4"
        case .attribute(.none): return "0"
        case .palette(let index): return "38;5;\(index)"
        }
    }

    func prompt(_ text: String) -> String { paint(text, appearance.promptColor) }
    func dots(_ text: String) -> String { paint(text, appearance.dotsColor) }
    package func error(_ text: String) -> String { paint(text, appearance.errorColor) }
    func warning(_ text: String) -> String { paint(text, appearance.warningColor) }
    package func success(_ text: String) -> String { paint(text, appearance.successColor) }
}
