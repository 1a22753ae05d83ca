import Testing
import TokenpinService

/// The site's revocation lists (`/etc/tokenpin/revoked.d`): what a line names, and what it revokes.
@Suite struct RevokedCardsParsingTests {
    @Test func linesCommentsAndSpellings() {
        let parsed = RevokedCards.parse(
            text: """
                # lost badges
                FFFE:0000AAAA   # alice
                fffe 0000 bbbb
                0000CCCC
                PIV-SERIAL:12345678
                piv-guid:00112233445566778899aabbccddeeff

                not-a-card
                piv-key:12
                """, file: "/etc/tokenpin/revoked.d/site")
        #expect(
            parsed.entries.map(\.identity) == [
                "FFFE0000AAAA", "FFFE0000BBBB", "0000CCCC", "piv-serial:12345678",
                "piv-guid:00112233445566778899aabbccddeeff",
            ])
        #expect(parsed.entries.first?.source == "/etc/tokenpin/revoked.d/site:2")
        #expect(parsed.problems.count == 2)
        #expect(parsed.problems.first?.hasPrefix("/etc/tokenpin/revoked.d/site:8: `not-a-card`") == true)
        let list = RevokedCards(entries: parsed.entries)
        #expect(list.entry(for: "FFFE0000AAAA")?.line == 2)
        #expect(list.entry(for: "0006" + "0000CCCC")?.line == 4, "8 digits revoke that serial of every maker")
        #expect(list.entry(for: "FFFE0000DDDD") == nil)
        #expect(list.entry(for: "piv-serial:12345678") != nil)
        #expect(list.entry(for: "piv-serial:1234567") == nil)
        #expect(
            list.reason(for: "FFFE0000AAAA")?.contains("revoked by this site (/etc/tokenpin/revoked.d/site:2)") == true)
    }

    @Test func aMissingDirectoryRevokesNothing() {
        let loaded = RevokedCards.load(directory: "/nonexistent/revoked.d")
        #expect(loaded.list.entries.isEmpty && loaded.problems.isEmpty)
    }
}
