import Foundation
import Testing
import TokenpinCore
import TokenpinPKCS11
import TokenpinTestSupport

/// Choosing a token and a key: RFC 7512 URIs matched by p11-kit, refusal of ambiguity with the candidates' URIs (as
/// systemd-cryptenroll refuses it), and what tokenpin reports checked against pkcs11-tool and p11tool.
@Suite("Token and key selection", .enabled(if: Tools.hasSoftHSM))
struct SelectionTests {
    /// Two tokens, `alpha` (P-256 under id 01) and `beta` (RSA 2048 under id 02, and P-384 under id 03).
    static func twoTokens() throws -> SoftHSM {
        let hsm = try SoftHSM()
        try hsm.initToken(label: "alpha")
        try hsm.initToken(label: "beta", pin: "654321")
        try hsm.generateKey(token: "alpha", type: "EC:prime256v1", id: "01", label: "alpha-ec")
        try hsm.generateKey(token: "beta", type: "rsa:2048", id: "02", label: "beta-rsa", pin: "654321")
        try hsm.generateKey(token: "beta", type: "EC:secp384r1", id: "03", label: "beta-ec", pin: "654321")
        return hsm
    }

    @Test("without a URI more than one usable key is refused, listing every candidate's URI")
    func ambiguity() throws {
        let hsm = try Self.twoTokens()
        let helper = try hsm.helper()
        defer { helper.stop() }
        let inventory = try helper.inventory()
        #expect(inventory.listings.map(\.token.label).sorted() == ["alpha", "beta"])
        #expect(inventory.keys.count == 3)
        do {
            _ = try helper.selectKey()
            Issue.record("three keys and no URI selected one")
        } catch {
            guard case .ambiguous(let uris) = error else { throw error }
            #expect(Set(uris) == Set(inventory.keys.map(\.key.uri)))
            #expect(uris.count == 3)
            #expect(error.description.contains("choose one with its URI"))
        }
    }

    @Test(
        "a URI selects by token, by id and by object label, as p11-kit matches it",
        arguments: [
            ("pkcs11:token=alpha", "alpha-ec"),
            ("pkcs11:token=beta;id=%02", "beta-rsa"),
            ("pkcs11:object=beta-ec", "beta-ec"),
            ("pkcs11:token=beta;id=%03;type=private", "beta-ec"),
            ("pkcs11:manufacturer=SoftHSM%20project;token=alpha", "alpha-ec"),
        ])
    func uriSelects(uri: String, label: String) throws {
        let hsm = try Self.twoTokens()
        let helper = try hsm.helper()
        defer { helper.stop() }
        let key = try helper.selectKey(uri: uri)
        #expect(key.label == label)
        // The key's own URI selects it again.
        #expect(try helper.selectKey(uri: key.uri) == key)
    }

    @Test("a URI that matches a token with more than one key is ambiguous; one that matches nothing says what is there")
    func uriRefusals() throws {
        let hsm = try Self.twoTokens()
        let helper = try hsm.helper()
        defer { helper.stop() }
        do {
            _ = try helper.selectKey(uri: "pkcs11:token=beta")
            Issue.record("two keys on beta and the URI named neither")
        } catch {
            guard case .ambiguous(let uris) = error else { throw error }
            #expect(uris.count == 2 && uris.allSatisfy { $0.contains("token=beta") })
        }
        do {
            _ = try helper.selectKey(uri: "pkcs11:token=gamma")
            Issue.record("a URI naming no token selected one")
        } catch {
            guard case .noToken(let why) = error else { throw error }
            #expect(why.contains("no usable PKCS#11 key matches pkcs11:token=gamma"))
            #expect(why.contains("token=alpha") && why.contains("token=beta"))
        }
    }

    @Test(
        "URIs tokenpin refuses before any module call",
        arguments: [
            "token=alpha", "pkcs11:token=alpha;pin-value=123456", "pkcs11:token=alpha?pin-source=file:/tmp/pin",
            "pkcs11:token=alpha;type=public", "pkcs11:token=alpha;type=cert", "pkcs11:token=%ZZ",
            "pkcs11:token=alpha;x-vendor-thing=1",
        ])
    func refusedURIs(uri: String) throws {
        let hsm = try SoftHSM()
        try hsm.initToken(label: "alpha")
        let helper = try hsm.helper()
        defer { helper.stop() }
        do {
            _ = try helper.selectKey(uri: uri)
            Issue.record("\(uri) was taken")
        } catch {
            guard case .invalidRequest = error else {
                Issue.record("\(uri): expected an invalid request, got \(error)")
                return
            }
            #expect(!error.description.contains("123456"))
        }
    }

    @Test("the URIs, ids and public keys tokenpin reports are the ones p11tool and pkcs11-tool report")
    func crossCheck() throws {
        let hsm = try Self.twoTokens()
        let helper = try hsm.helper()
        defer { helper.stop() }
        let inventory = try helper.inventory()
        for listing in inventory.listings {
            let pin = listing.token.label == "alpha" ? "123456" : "654321"
            if let p11tool = Tools.p11tool {
                // p11tool (GnuTLS) prints a private key's URL after login: tokenpin's must be the same string.
                let result = try run(
                    p11tool,
                    ["--provider", hsm.module, "--list-privkeys", "--login", "--set-pin", pin, listing.token.uri],
                    environment: hsm.environment)
                // SoftHSM shows private keys only after login: tokenpin's URI is p11tool's without `object=`, and
                // p11tool's selects the same key.
                let urls = p11toolURLs(result.output)
                #expect(Set(urls.map(withoutObject)) == Set(listing.keys.map(\.uri)), "p11tool: \(result.output)")
                for url in urls {
                    #expect(listing.keys.contains(try helper.selectKey(uri: url)))
                }
                let tokens = try run(
                    p11tool, ["--provider", hsm.module, "--list-tokens"], environment: hsm.environment)
                #expect(tokens.output.contains("URL: \(listing.token.uri)\n"))
            }
            // pkcs11-tool prints each public key's EC_POINT (DER) and the RSA modulus is read with --read-object.
            let objects = try hsm.pkcs11Tool([
                "--token-label", listing.token.label, "--list-objects", "--type", "pubkey",
            ])
            for key in listing.keys {
                switch key.publicKey {
                case .ec(let point):
                    let der = [0x04, UInt8(point.count)] + point
                    #expect(objects.output.contains("EC_POINT:   " + HexText.lower(der)), "\(objects.output)")
                case .rsa(let modulus, let exponent):
                    let file = hsm.directory + "/pub-\(key.idHex).der"
                    let read = try hsm.pkcs11Tool([
                        "--token-label", listing.token.label, "--read-object", "--type", "pubkey", "--id", key.idHex,
                        "--output-file", file,
                    ])
                    #expect(read.status == 0)
                    let openssl = try run(
                        "/usr/bin/openssl", ["rsa", "-pubin", "-inform", "DER", "-in", file, "-noout", "-modulus"])
                    #expect(
                        openssl.output.trimmingCharacters(in: .whitespacesAndNewlines) == "Modulus="
                            + HexText.upper(modulus))
                    #expect(exponent == [0x01, 0x00, 0x01])
                }
                #expect(objects.output.contains("ID:         \(key.idHex)"))
            }
        }
    }

    @Test("the modules p11-kit is configured to load: SoftHSM's token is found among them and selected by module-name")
    func p11kitModules() throws {
        let hsm = try SoftHSM()
        try hsm.initToken(label: "through-p11-kit")
        try hsm.generateKey(token: "through-p11-kit", type: "EC:prime256v1", id: "07", label: "k")
        // p11-kit loads what the system configures (Debian's softhsm2, opensc-pkcs11 and p11-kit-trust modules);
        // OpenSC is given no pcscd to reach, so it shows no token and touches no reader of the tests' sandbox.
        let environment =
            hsm.environmentList + ["PCSCLITE_CSOCK_NAME=\(hsm.directory)/no-pcscd", "OPENSC_CONF=/dev/null"]
        let helper = try PKCS11Helper.start(
            module: .p11kit, timeout: 20_000, executable: Tools.helper, environment: environment)
        defer { helper.stop() }
        #expect(helper.modules.contains("softhsm2"), "\(helper.modules)")
        let key = try helper.selectKey(uri: "pkcs11:token=through-p11-kit")
        #expect(key.token.module == "softhsm2")
        #expect(try helper.selectKey(uri: "pkcs11:token=through-p11-kit?module-name=softhsm2") == key)
        #expect(throws: PKCS11TokenError.self) {
            try helper.selectKey(uri: "pkcs11:token=through-p11-kit?module-name=opensc-pkcs11")
        }
        let challenge = try PKCS11Challenge.fresh(for: key)
        let answer = try helper.answer(key, pin: secret("123456"), challenge: challenge.challenge)
        let matches = answer.isEqual(to: challenge.secret)
        #expect(matches)
    }
}

/// The `URL:` lines of p11tool's listing.
func p11toolURLs(_ output: String) -> [String] {
    output.split(separator: "\n").compactMap { line -> String? in
        let text = line.trimmingCharacters(in: .whitespaces)
        return text.hasPrefix("URL: ") ? String(text.dropFirst(5)) : nil
    }
}

/// A URI without its `object=` attribute.
func withoutObject(_ uri: String) -> String {
    uri.split(separator: ";", omittingEmptySubsequences: false).filter { !$0.hasPrefix("object=") }
        .joined(separator: ";")
}

extension HexText {
    static func lower(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func upper(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02X", $0) }.joined() }
}

/// Hex for the comparisons above.
enum HexText {}
