import Foundation
import Testing

@testable import TokenpinCore

/// The documentation's key lists follow `Configuration.declarations`: tokenpin.conf(5)'s key list is generated
/// from them (`TOKENPIN_UPDATE_DOCS=1 swift test --filter ConfigDocsTests` rewrites it), and docs/config.md has
/// one table row for each declared key and none for a key that does not exist.
@Suite struct ConfigDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
    static let manPage = root.appendingPathComponent("docs/man/tokenpin.conf.5.scd")
    static let begin = "; The key list, generated from Configuration.declarations (ConfigDocsTests):"
    static let end = "; End of the generated key list."

    /// What each audience's heading says.
    static func heading(_ audience: ConfigurationKey.Audience) -> String {
        switch audience {
        case .policy: "## The PIN, the record and the card (the CLI in local mode; tokenpind for its records)"
        case .client: "## The CLI's appearance (the only keys a client's files set when it goes through tokenpind)"
        case .daemon: "## tokenpind (its system files only)"
        }
    }

    /// `text` with scdoc's markup characters taken literally.
    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "*", with: "\\*")
            .replacingOccurrences(of: "_", with: "\\_")
    }

    /// The generated part of the man page, marker lines included.
    static func generatedKeyList() -> String {
        var lines = [begin]
        for audience in ConfigurationKey.Audience.allCases {
            lines += ["", heading(audience), ""]
            for key in Configuration.declarations where key.audience == audience {
                lines.append("*\(key.name)* = _\(escaped(key.values))_ (default: \(escaped(key.defaultValue)))")
                lines.append("\t" + escaped(key.summary))
                lines.append("")
            }
            lines.removeLast()
        }
        lines += ["", end]
        return lines.joined(separator: "\n")
    }

    @Test func theManPagesKeyListIsTheDeclarations() throws {
        let page = try String(contentsOf: Self.manPage, encoding: .utf8)
        let start = try #require(page.range(of: Self.begin), "tokenpin.conf.5.scd lacks the line `\(Self.begin)`")
        let stop = try #require(page.range(of: Self.end), "tokenpin.conf.5.scd lacks the line `\(Self.end)`")
        let current = String(page[start.lowerBound..<stop.upperBound])
        let expected = Self.generatedKeyList()
        if current != expected, ProcessInfo.processInfo.environment["TOKENPIN_UPDATE_DOCS"] == "1" {
            try page.replacingCharacters(in: start.lowerBound..<stop.upperBound, with: expected)
                .write(to: Self.manPage, atomically: true, encoding: .utf8)
            return
        }
        #expect(
            current == expected,
            """
            docs/man/tokenpin.conf.5.scd's key list differs from Configuration.declarations; \
            TOKENPIN_UPDATE_DOCS=1 swift test --filter ConfigDocsTests rewrites it as:
            \(expected)
            """)
    }

    @Test func configMarkdownHasOneRowPerDeclaredKey() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/config.md"), encoding: .utf8)
        let rows = text.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            let cell = line.dropFirst(3)
            return cell.firstIndex(of: "`").map { String(cell[..<$0]) }
        }
        for key in Configuration.keys {
            #expect(rows.filter { $0 == key }.count == 1, "docs/config.md: \(key) has no row, or more than one")
        }
        for row in rows where !row.hasPrefix("app.APP.") {
            #expect(Configuration.keys.contains(row), "docs/config.md has a row for `\(row)`, which is no key")
        }
    }

    @Test func everyKeyIsDeclaredOnceAndReadBySomeone() {
        #expect(Set(Configuration.keys).count == Configuration.keys.count)
        #expect(
            Configuration.clientKeys == Set(Configuration.declarations.filter { $0.audience == .client }.map(\.name)))
        for key in Configuration.declarations {
            #expect(!key.summary.isEmpty && !key.values.isEmpty && !key.defaultValue.isEmpty, "\(key.name)")
        }
    }
}
