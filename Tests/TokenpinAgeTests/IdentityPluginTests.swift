import Testing
import TokenpinCore

@testable import TokenpinAge

/// The identity-v1 state machine fed scripted protocol text, as age 1.1.1 writes it.
@Suite struct IdentityPluginTests {
    /// The file key the fixture's header MAC accepts.
    func isFixtureFileKey(_ body: [UInt8]) -> Bool {
        var bytes = body
        return X25519Tests.headerMAC(fileKey: SecretBytes(consuming: &bytes)) == AgeBase64.decode(Fixture.mac)
    }

    @Test(arguments: [1, 7, 4096])
    func opensTheFileAgeMade(chunk: Int) throws {
        // One `ok` per command the plugin sends: the file key; then done.
        let transport = ScriptTransport(Fixture.phase1() + "-> ok\n\n", chunk: chunk)
        let unlocker = ScriptedUnlocker(.secret(Fixture.secret))
        #expect(AgeIdentityPlugin.run(transport, unlocker: unlocker) == .done(fileKeys: 1, errors: 0))
        #expect(unlocker.calls == [Fixture.tokenpinIdentity])
        let written = try transport.written()
        #expect(written.map(\.arguments) == [["file-key", "0"], ["done"]])
        #expect(isFixtureFileKey(written[0].body))
    }

    @Test func greaseAndOtherStanzasAreLeftAlone() throws {
        let script =
            "-> grease-7f 12 x\nAAAA\n"
            + "-> recipient-stanza 0 scrypt c2FsdHNhbHRzYWx0c2FsdA 18\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
            + Fixture.phase1() + "-> ok\n\n"
        let transport = ScriptTransport(script)
        let unlocker = ScriptedUnlocker(.secret(Fixture.secret))
        #expect(AgeIdentityPlugin.run(transport, unlocker: unlocker) == .done(fileKeys: 1, errors: 0))
        #expect(try transport.written().map(\.arguments) == [["file-key", "0"], ["done"]])
    }

    @Test func nothingIsAskedWithoutAnX25519Stanza() throws {
        let script =
            "-> add-identity \(Fixture.tokenpinIdentity)\n\n"
            + "-> recipient-stanza 0 scrypt c2FsdHNhbHRzYWx0c2FsdA 18\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
            + "-> done\n\n"
        let transport = ScriptTransport(script)
        let unlocker = ScriptedUnlocker(.failure("must not be asked"))
        #expect(AgeIdentityPlugin.run(transport, unlocker: unlocker) == .done(fileKeys: 0, errors: 0))
        #expect(unlocker.calls.isEmpty)
        #expect(try transport.written().map(\.arguments) == [["done"]])
    }

    @Test func aFileForOthersGetsNoKeyAndAMessage() throws {
        // Only the other recipient's stanza: the verification runs (X25519 stanzas name nobody), nothing opens.
        let transport = ScriptTransport(Fixture.phase1(stanzas: [Fixture.stanzas[0]]) + "-> ok\n\n")
        let unlocker = ScriptedUnlocker(.secret(Fixture.secret))
        #expect(AgeIdentityPlugin.run(transport, unlocker: unlocker) == .done(fileKeys: 0, errors: 0))
        let written = try transport.written()
        #expect(written.map(\.arguments) == [["msg"], ["done"]])
        #expect(
            String(decoding: written[0].body, as: UTF8.self)
                == "\(Fixture.nativeRecipient) is not among the recipients of this file")
    }

    @Test func anotherPluginsIdentityIsRefusedAndNothingUnwrapped() throws {
        let yubikey = Bech32.encode(human: "age-plugin-yubikey-", bytes: [1, 2, 3]).uppercased()
        let script = Fixture.phase1(identity: yubikey) + "-> ok\n\n"
        let transport = ScriptTransport(script)
        let unlocker = ScriptedUnlocker(.secret(Fixture.secret))
        #expect(AgeIdentityPlugin.run(transport, unlocker: unlocker) == .done(fileKeys: 0, errors: 1))
        #expect(unlocker.calls.isEmpty)
        let written = try transport.written()
        #expect(written.map(\.arguments) == [["error", "identity", "0"], ["done"]])
        #expect(
            String(decoding: written[0].body, as: UTF8.self)
                == "not a tokenpin identity (AGE-PLUGIN-YUBIKEY-…, not AGE-PLUGIN-TOKENPIN-…)")
    }

    @Test(arguments: [
        (
            "-> recipient-stanza 0 X25519 AAAA\ny2JEtmn05bKQiFO1AUChwU2KlxTrWv4IDAkOSCPjNUc\n",
            "an X25519 stanza's share is not the canonical base64 of 32 bytes"
        ),
        (
            "-> recipient-stanza 0 X25519 qAIgTZC28X99HhH/FBcE4JDA64K/Ixu9VrQ4sYx6tSI extra\ny2JEtmn05bKQiFO1AUChwU2KlxTrWv4IDAkOSCPjNUc\n",
            "an X25519 stanza takes one argument, not 2"
        ),
        (
            "-> recipient-stanza 0 X25519 qAIgTZC28X99HhH/FBcE4JDA64K/Ixu9VrQ4sYx6tSI\ny2JEtmn05bKQiFO1AUChwU2KlxTrWv4IDAkOSCPjNQ\n",
            "an X25519 stanza's body is not 32 bytes"
        ),
    ])
    func malformedX25519StanzaIsAnErrorForItsFile(stanza: String, message: String) throws {
        let script = "-> add-identity \(Fixture.tokenpinIdentity)\n\n" + stanza + "-> done\n\n" + "-> ok\n\n"
        let transport = ScriptTransport(script)
        let unlocker = ScriptedUnlocker(.secret(Fixture.secret))
        #expect(AgeIdentityPlugin.run(transport, unlocker: unlocker) == .done(fileKeys: 0, errors: 1))
        #expect(unlocker.calls.isEmpty)
        let written = try transport.written()
        #expect(written.map(\.arguments) == [["error", "stanza", "0", "0"], ["done"]])
        #expect(String(decoding: written[0].body, as: UTF8.self) == message)
    }

    @Test func aFailedVerificationIsAnIdentityError() throws {
        let transport = ScriptTransport(Fixture.phase1() + "-> ok\n\n")
        let unlocker = ScriptedUnlocker(.failure("wrong PIN (4 tries left); nothing was decrypted"))
        #expect(AgeIdentityPlugin.run(transport, unlocker: unlocker) == .done(fileKeys: 0, errors: 1))
        let written = try transport.written()
        #expect(written.map(\.arguments) == [["error", "identity", "0"], ["done"]])
        #expect(
            String(decoding: written[0].body, as: UTF8.self) == "wrong PIN (4 tries left); nothing was decrypted")
    }

    @Test func aSecretThatDoesNotMatchTheIdentityOpensNothing() throws {
        let transport = ScriptTransport(Fixture.phase1() + "-> ok\n\n")
        let unlocker = ScriptedUnlocker(.secret([UInt8](repeating: 9, count: 32)))
        #expect(AgeIdentityPlugin.run(transport, unlocker: unlocker) == .done(fileKeys: 0, errors: 1))
        let written = try transport.written()
        #expect(written.map(\.arguments) == [["error", "identity", "0"], ["done"]])
        #expect(String(decoding: written[0].body, as: UTF8.self).contains("record does not open"))
    }

    @Test func requestSecretAnsweredAndFailed() throws {
        // The client answers the prompt with the secret: the file opens.
        let secret = AgeBase64.encodedString(Array("483920".utf8))
        let answered = ScriptTransport(Fixture.phase1() + "-> ok\n\(secret)\n" + "-> ok\n\n")
        let asking = ScriptedUnlocker(.ask(prompt: "tokenpin PIN for alice (5 tries left):", then: Fixture.secret))
        #expect(AgeIdentityPlugin.run(answered, unlocker: asking) == .done(fileKeys: 1, errors: 0))
        #expect(asking.answered == ["483920"])
        let first = try answered.written()
        #expect(first.map(\.arguments) == [["request-secret"], ["file-key", "0"], ["done"]])
        #expect(String(decoding: first[0].body, as: UTF8.self) == "tokenpin PIN for alice (5 tries left):")
        // `fail` (no terminal, Ctrl-D): cancelled, an identity error, nothing opened.
        let failed = ScriptTransport(Fixture.phase1() + "-> fail\n\n" + "-> ok\n\n")
        let refused = ScriptedUnlocker(.ask(prompt: "PIN:", then: Fixture.secret))
        #expect(AgeIdentityPlugin.run(failed, unlocker: refused) == .done(fileKeys: 0, errors: 1))
        #expect(refused.answered == [nil])
        #expect(try failed.written().map(\.arguments) == [["request-secret"], ["error", "identity", "0"], ["done"]])
    }

    @Test func theClientGoingAwayMidPromptEndsTheSession() {
        let transport = ScriptTransport(Fixture.phase1())
        let unlocker = ScriptedUnlocker(.ask(prompt: "PIN:", then: Fixture.secret))
        #expect(
            AgeIdentityPlugin.run(transport, unlocker: unlocker)
                == .failed(AgeProtocolError("the client closed the connection before answering 'request-secret'")))
    }

    @Test(arguments: [
        ("add-identity X\n", "a stanza must start with '-> ' and an argument"),
        ("->  add-identity\n\n", "a stanza has an empty argument (two spaces, or one at the end)"),
        ("-> add-identity \u{7}\n\n", "a stanza argument holds a character outside printable ASCII"),
        (
            "-> grease\n" + String(repeating: "A", count: 65) + "\n",
            "a body line of the 'grease' stanza is over 64 characters"
        ),
        ("-> grease\nAB\n", "the body of the 'grease' stanza is not canonical base64"),
        ("-> grease\nAA==\n", "the body of the 'grease' stanza is not base64"),
        ("-> grease\nA\n", "the body of the 'grease' stanza is not canonical base64"),
        ("-> grease\n", "the input ended inside the body of a 'grease' stanza"),
        ("-> add-identity X", "the input ended in the middle of a line"),
        ("-> add-identity X\n\n", "the input ended before phase 1's 'done'"),
        ("", "the input ended before phase 1's 'done'"),
        (
            "-> recipient-stanza 1 X25519 AAAA\n\n-> recipient-stanza 0 X25519 AAAA\n\n-> done\n\n",
            "recipient-stanza file indices went back (0 after 1)"
        ),
        ("-> recipient-stanza 01 X25519\n\n-> done\n\n", "recipient-stanza takes a file index and a stanza"),
        ("-> recipient-stanza 0\n\n-> done\n\n", "recipient-stanza takes a file index and a stanza"),
    ])
    func malformedInputIsRefusedClearly(script: String, message: String) throws {
        let transport = ScriptTransport(script)
        let unlocker = ScriptedUnlocker(.failure("must not be asked"))
        #expect(AgeIdentityPlugin.run(transport, unlocker: unlocker) == .failed(AgeProtocolError(message)))
        #expect(unlocker.calls.isEmpty)
        let written = try transport.written()
        #expect(written.map(\.arguments) == [["error", "internal"]])
        #expect(String(decoding: written[0].body, as: UTF8.self) == "malformed input: " + message)
    }

    @Test func aLongLineIsRefusedWithoutGrowingWithoutBound() {
        let script = "-> grease " + String(repeating: "x", count: AgeStanzaReader.lineLimit + 10) + "\n\n"
        let transport = ScriptTransport(script)
        #expect(
            AgeIdentityPlugin.run(transport, unlocker: ScriptedUnlocker(.failure("no")))
                == .failed(AgeProtocolError("a line over 65536 bytes")))
    }

    @Test func anOversizedBodyOfAnotherStanzaIsDropped() throws {
        // 20 KiB of body for a stanza that is not ours: read through, kept nowhere, the file still opens.
        let line = String(repeating: "A", count: 64) + "\n"
        let big = "-> recipient-stanza 0 big-plugin arg\n" + String(repeating: line, count: 320) + "\n"
        let ours = Fixture.stanzas[1]
        let transport = ScriptTransport(
            "-> add-identity \(Fixture.tokenpinIdentity)\n\n" + big
                + "-> recipient-stanza 0 X25519 \(ours.share)\n\(ours.body)\n-> done\n\n-> ok\n\n")
        #expect(
            AgeIdentityPlugin.run(transport, unlocker: ScriptedUnlocker(.secret(Fixture.secret)))
                == .done(fileKeys: 1, errors: 0))
    }
}

/// Stanza framing, base64 and the identity encoding.
@Suite struct StanzaTests {
    @Test(arguments: [0, 1, 47, 48, 49, 96, 200])
    func bodiesRoundTrip(length: Int) throws {
        let body = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let out = ScriptTransport("")
        try AgeStanzaWriter(out).write(["type", "a", "b"], publicBody: body)
        let lines = String(decoding: out.writtenBytes, as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false)
        // Every body line is 64 characters but the last, which is shorter (possibly empty).
        let bodyLines = lines.dropFirst().dropLast()
        #expect(bodyLines.dropLast().allSatisfy { $0.count == 64 })
        #expect((bodyLines.last?.count ?? 0) < 64)
        let read = try out.written()
        #expect(read.count == 1)
        #expect(read[0].arguments == ["type", "a", "b"])
        #expect(read[0].body == body)
    }

    @Test func base64IsCanonical() {
        #expect(AgeBase64.decode("AA") == [0])
        #expect(AgeBase64.decode("AB") == nil)  // leftover bits not zero
        #expect(AgeBase64.decode("AA==") == nil)  // padding
        #expect(AgeBase64.decode("A") == nil)  // no whole byte
        #expect(AgeBase64.decode("") == [])
        #expect(AgeBase64.encodedString([0xfb, 0xff]) == "+/8")
    }

    @Test func identityEncoding() throws {
        let identity = Fixture.tokenpinIdentity
        let text = identity.description
        #expect(text.hasPrefix("AGE-PLUGIN-TOKENPIN-1"))
        #expect(text == text.uppercased())
        #expect(try TokenpinAgeIdentity(parsing: text) == identity)
        #expect(throws: AgeKeyError("an age identity is written in upper case")) {
            try TokenpinAgeIdentity(parsing: text.lowercased())
        }
        let v2 = Bech32.encode(human: "age-plugin-tokenpin-", bytes: [2] + identity.recipient.publicKey + [0x61])
        #expect(throws: AgeKeyError("a tokenpin identity of version 2; this plugin reads version 1")) {
            try TokenpinAgeIdentity(parsing: v2.uppercased())
        }
        let short = Bech32.encode(human: "age-plugin-tokenpin-", bytes: [1] + identity.recipient.publicKey)
        #expect(throws: AgeKeyError("a tokenpin identity too short for its recipient and user")) {
            try TokenpinAgeIdentity(parsing: short.uppercased())
        }
        #expect(throws: AgeKeyError("not an age identity: the checksum does not match (a typo, or a truncated line)")) {
            try TokenpinAgeIdentity(parsing: String(text.dropLast()) + (text.last == "Q" ? "P" : "Q"))
        }
    }
}
