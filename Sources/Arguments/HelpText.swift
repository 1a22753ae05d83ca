/// Help in the argument-parser layout (`OVERVIEW:`, `USAGE:`, `OPTIONS:`, `SUBCOMMANDS:`), generated from the
/// declarations.
extension Program {
    /// Help and usage lines are wrapped at this width.
    static let width = 110

    /// The usage line of the program (`subcommand` nil) or of one subcommand, without `USAGE:`.
    package func usage(for subcommand: Subcommand? = nil) -> String {
        usageWords(for: subcommand).joined(separator: " ")
    }

    /// The usage line in words that a wrap keeps together: `tokenpin`, `toggle`, `<type>`, `[--yes]`.
    func usageWords(for subcommand: Subcommand?) -> [String] {
        if let subcommand {
            return [name, subcommand.name] + subcommand.arguments.map(\.usage) + subcommand.options.map(\.usage)
        }
        if !subcommands.isEmpty { return [name, "[<options>]", "<subcommand>"] }
        return [name] + options.filter { !$0.stopsValidation }.map(\.usage) + arguments.map(\.usage)
    }

    /// The main help: overview, usage, the program's options, subcommands and the extra sections.
    package func helpText() -> String {
        var text = "OVERVIEW: \(overview)\n"
        if let discussion { text += "\n\(discussion)\n" }
        text += "\n" + usageBlock(for: nil) + "\n"
        text += "\nOPTIONS:\n" + Self.columns(options.map { ($0.label, $0.help) }) + "\n"
        // One column width for every group, so the abstracts line up down the whole list.
        let width = Self.columnWidth(subcommands.map(\.name))
        for group in subcommandGroups {
            text +=
                "\n\(group.title.map { "\($0) SUBCOMMANDS" } ?? "SUBCOMMANDS"):\n"
                + Self.columns(group.subcommands.map { ($0.name, $0.abstract) }, width: width) + "\n"
        }
        for section in sections {
            if let paragraph = section.text {
                text += "\n\(section.title): \(paragraph)\n"
            } else {
                text += "\n\(section.title):\n" + Self.columns(section.rows) + "\n"
            }
        }
        if !subcommands.isEmpty { text += "\n  See '\(name) help <subcommand>' for detailed help.\n" }
        return text
    }

    /// A subcommand's help: its abstract and discussion, usage, its own options and then the program's.
    package func helpText(for subcommand: Subcommand) -> String {
        var text = "OVERVIEW: \(subcommand.abstract)\n"
        if let discussion = subcommand.discussion { text += "\n\(discussion)\n" }
        text += "\n" + usageBlock(for: subcommand) + "\n"
        text += "\nOPTIONS:\n" + Self.columns((subcommand.options + options).map { ($0.label, $0.help) }) + "\n"
        return text
    }

    /// `USAGE: ...`, wrapped under its first word when it is long.
    func usageBlock(for subcommand: Subcommand?) -> String {
        let words = usageWords(for: subcommand)
        var lines: [String] = []
        var line = "USAGE:"
        let indent = String(repeating: " ", count: "USAGE: ".count + name.count + 1)
        for word in words {
            if line.count + 1 + word.count > Self.width && line != "USAGE:" && !line.hasSuffix(" " + name) {
                lines.append(line)
                line = indent + word
            } else {
                line += " " + word
            }
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }

    /// The first column's width for these labels: 22, or the longest and two spaces.
    static func columnWidth(_ labels: [String]) -> Int { max(22, (labels.map(\.count).max() ?? 0) + 2) }

    /// Two columns, indented two spaces; the second starts at column 24 or after the longest first one (`width`:
    /// at 2 + `width`, for columns that line up with others).
    /// A line break in the second column continues under it.
    package static func columns(_ rows: [(String, String)], width: Int? = nil) -> String {
        let width = width ?? columnWidth(rows.map(\.0))
        let continuation = "\n" + String(repeating: " ", count: 2 + width)
        return rows.map { row in
            let padding = String(repeating: " ", count: width - row.0.count)
            let second = row.1.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: continuation)
            return "  " + row.0 + padding + second
        }.joined(separator: "\n")
    }
}
