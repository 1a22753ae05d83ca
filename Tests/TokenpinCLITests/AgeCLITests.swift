import Foundation
import Testing
import TokenpinAge
import TokenpinCore

/// `tokenpin age`: the recipient and the identity after a verification, the recipient read from an identity, the
/// usage errors, and the plugin protocol as age-plugin-tokenpin runs it, fed age's protocol text.
@Suite struct AgeCLITests {
    /// The recipient and the identity line, made after the PIN.
    func made(_ cli: CLI) throws -> (recipient: String, identityFile: String, identity: String) {
        let recipient = try cli.run(["age", "recipient", "--pin-stdin"], input: "482916\n")
        #expect(recipient.status == 0, "\(recipient.stderr)")
        let identity = try cli.run(["age", "identity", "--pin-stdin"], input: "482916\n")
        #expect(identity.status == 0, "\(identity.stderr)")
        let file = cli.directory + "/age-identity"
        try identity.stdout.write(toFile: file, atomically: true, encoding: .utf8)
        let line = identity.stdout.split(separator: "\n").last.map(String.init) ?? ""
        return (String(recipient.stdout.dropLast()), file, line)
    }

    @Test func recipientAndIdentityAfterThePIN() throws {
        let cli = CLI()
        try cli.enrol()
        let (recipient, file, line) = try made(cli)
        #expect(recipient.hasPrefix("age1") && recipient.count == 62, "\(recipient)")
        #expect(line.hasPrefix("AGE-PLUGIN-TOKENPIN-1"), "\(line)")
        #expect(try TokenpinAgeIdentity(parsing: line).recipient.description == recipient)
        let comment = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").first ?? ""
        #expect(comment.hasPrefix("# tokenpin age identity of ") && comment.contains(recipient))
        let read = try cli.run(["age", "recipient", "--identity", file])
        #expect(read.status == 0 && read.stdout == recipient + "\n", "\(read.stderr)")
        let fromStdin = try cli.run(["age", "recipient", "--identity", "-"], input: line + "\n")
        #expect(fromStdin.stdout == recipient + "\n")
        let json = try cli.run(["--json", "age", "recipient", "--pin-stdin"], input: "482916\n")
        #expect(json.json["recipient"] as? String == recipient)
        #expect(json.json["ok"] as? Bool == true)
        // The same recipient as the application key of age gives, which `derive age` releases.
        let derived = try cli.run(["derive", "age", "--format", "hex", "--pin-stdin"], input: "482916\n")
        var key = try #require(hexBytes(String(derived.stdout.dropLast())))
        #expect(try AgeX25519.recipient(of: SecretBytes(consuming: &key)).description == recipient)
        #expect(cli.remaining == 5)
    }

    @Test func aWrongPINPrintsNothingAndCounts() throws {
        let cli = CLI()
        try cli.enrol()
        for action in ["recipient", "identity"] {
            let wrong = try cli.run(["age", action, "--pin-stdin"], input: "000001\n")
            #expect(wrong.status == 1 && wrong.stdout.isEmpty, "\(wrong.stdout)")
            #expect(wrong.stderr.contains("Wrong PIN"), "\(wrong.stderr)")
        }
        #expect(cli.remaining == 3)
    }

    @Test(arguments: [
        (["age"], "missing recipient|identity|plugin"),
        (["age", "frobnicate"], "frobnicate"),
        (["age", "identity", "--identity", "x"], "--identity does not apply to `age identity`"),
        (["age", "recipient", "--identity", "x", "--method", "pin"], "--method does not go with it"),
        (["age", "recipient", "--age-plugin=identity-v1"], "--age-plugin applies to `age plugin`"),
        (["age", "plugin"], "age runs it (as age-plugin-tokenpin) with --age-plugin=identity-v1"),
        (["age", "plugin", "--age-plugin=recipient-v1"], "unknown age plugin state machine 'recipient-v1'"),
        (["age", "plugin", "--age-plugin=identity-v1", "--method", "pin"], "takes only --age-plugin"),
    ])
    func usageErrors(arguments: [String], message: String) throws {
        let cli = CLI()
        let result = try cli.run(arguments, input: "")
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    @Test func anIdentityFileWithoutATokenpinLine() throws {
        let cli = CLI()
        let file = cli.directory + "/native"
        try "# a native key\nAGE-SECRET-KEY-1QQQ\n".write(toFile: file, atomically: true, encoding: .utf8)
        let result = try cli.run(["age", "recipient", "--identity", file])
        #expect(result.status == 74 && result.stdout.isEmpty, "\(result.status) \(result.stderr)")
        #expect(result.stderr.contains("has no tokenpin identity"), "\(result.stderr)")
        let missing = try cli.run(["age", "recipient", "--identity", cli.directory + "/none"])
        #expect(missing.status == 74 && missing.stderr.contains("cannot read"), "\(missing.stderr)")
    }

    /// A session as age runs it: the identity, a stanza wrapped to the recipient, the PIN as age answers.
    func session(identity: String, recipient: String, answer: String) throws -> (String, [UInt8]) {
        var fileKey = Array(0..<16).map { UInt8($0 * 3) }
        let copy = fileKey
        let (share, body) = try AgeX25519.wrap(
            SecretBytes(consuming: &fileKey), to: try AgeRecipient(parsing: recipient))
        let text =
            "-> add-identity \(identity)\n\n-> grease-1 x\n\n"
            + "-> recipient-stanza 0 X25519 \(AgeBase64.encodedString(share))\n\(AgeBase64.encodedString(body))\n"
            + "-> done\n\n" + answer + "-> ok\n\n"
        return (text, copy)
    }

    @Test func thePluginOpensAStanzaAfterThePINAgeAsked() throws {
        let cli = CLI()
        try cli.enrol()
        let (recipient, _, identity) = try made(cli)
        let pin = AgeBase64.encodedString(Array("482916".utf8))
        let (text, fileKey) = try session(identity: identity, recipient: recipient, answer: "-> ok\n\(pin)\n")
        let result = try cli.run(["age", "plugin", "--age-plugin=identity-v1"], input: text)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.filter { $0.hasPrefix("-> ") } == ["-> request-secret", "-> file-key 0", "-> done"])
        let prompt = AgeBase64.decode(lines[1]).map { String(decoding: $0, as: UTF8.self) }
        #expect(prompt?.hasPrefix("tokenpin PIN for ") == true && prompt?.hasSuffix("(5 tries left):") == true)
        #expect(AgeBase64.decode(lines[3]) == fileKey)
        #expect(cli.remaining == 5)
    }

    @Test func aWrongPINAndACancelThroughThePlugin() throws {
        let cli = CLI()
        try cli.enrol()
        let (recipient, _, identity) = try made(cli)
        let wrongPIN = AgeBase64.encodedString(Array("000001".utf8))
        let (wrong, _) = try session(identity: identity, recipient: recipient, answer: "-> ok\n\(wrongPIN)\n")
        let refused = try cli.run(["age", "plugin", "--age-plugin=identity-v1"], input: wrong)
        #expect(refused.status == 0, "\(refused.stderr)")
        #expect(refused.stdout.contains("-> error identity 0\n"), "\(refused.stdout)")
        #expect(!refused.stdout.contains("file-key"))
        #expect(
            refused.stdout.contains(
                AgeBase64.encodedString(Array("wrong PIN (4 tries left); nothing was".utf8)).prefix(40)))
        #expect(cli.remaining == 4)
        for answer in ["-> fail\n\n", "-> ok\n\n"] {  // age's fail, and an empty answer (Enter alone)
            let (cancel, _) = try session(identity: identity, recipient: recipient, answer: answer)
            let cancelled = try cli.run(["age", "plugin", "--age-plugin=identity-v1"], input: cancel)
            #expect(cancelled.stdout.contains("-> error identity 0\n"), "\(cancelled.stdout)")
            let message = cancelled.stdout.split(separator: "\n").drop { $0 != "-> error identity 0" }.dropFirst()
                .first.flatMap { AgeBase64.decode(String($0)) }.map { String(decoding: $0, as: UTF8.self) }
            #expect(message?.hasPrefix("cancelled: nothing was tried or counted") == true, "\(message ?? "")")
        }
        #expect(cli.remaining == 4, "a cancel counts nothing")
    }

    @Test func malformedProtocolInputIsRefused() throws {
        let cli = CLI()
        let result = try cli.run(
            ["age", "plugin", "--age-plugin=identity-v1"], input: "-> add-identity\nnot base64!\n")
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("-> error internal\n"))
        #expect(result.stderr.contains("the age plugin protocol failed"), "\(result.stderr)")
    }

    func hexBytes(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            guard let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex),
                let byte = UInt8(text[index..<next], radix: 16)
            else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}
