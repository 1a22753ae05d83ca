import Foundation
import Testing
import TokenpinTestSupport

/// `tokenpin bench --token --app pkcs11` run once on SoftHSM with few iterations: the report's fields and the call
/// counts, which are deterministic (what a verify's helper reports is its start and the same listing and login with
/// the key's answer that the bare round makes in process). Nothing timed is asserted: speed belongs to the bench.
@Suite("bench --token on a PKCS#11 key: the report and its call counts", .serialized, .enabled(if: Tools.hasSoftHSM))
struct BenchSmokeTests {
    @Test(
        "SoftHSM: calls per verify = the helper's start + the bare listing + the bare answer",
        arguments: [("EC:prime256v1", 14), ("rsa:2048", 10)])
    func softHSM(type: String, answerCalls: Int) throws {
        let hsm = try SoftHSM()
        try hsm.initToken(label: "bench")
        try hsm.generateKey(token: "bench", type: type, id: "01", label: "k")
        try "kdf-memory-mib = 8\nkdf-passes = 1\n".write(
            toFile: hsm.directory + "/tokenpin.conf", atomically: true, encoding: .utf8)
        let tokenpin = [
            "--local", "--store", hsm.directory + "/store", "--config", hsm.directory + "/tokenpin.conf", "--pin-stdin",
        ]
        let key = ["--pkcs11-module", hsm.module, "--token-uri", "pkcs11:token=bench;id=%01"]
        func cli(_ arguments: [String], input: String) throws -> ProgramResult {
            try run(Tools.tokenpin, tokenpin + arguments, environment: hsm.environment, input: input)
        }
        let enrol = try cli(
            ["enrol", "--recovery-key-file", hsm.directory + "/recovery"], input: "739154\n739154\n")
        #expect(enrol.status == 0, "\(enrol.errors)")
        let bind = try cli(["toggle", "token", "on"] + key, input: "739154\n123456\n")
        #expect(bind.status == 0, "\(bind.errors)")

        let bench = try cli(["--json", "bench", "--token", "--iterations", "2"] + key, input: "123456\n")
        #expect(bench.status == 0, "\(bench.errors)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(bench.output.utf8)) as? [String: Any], "\(bench.output)")
        #expect(report["ok"] as? Bool == true)
        #expect(report["application"] as? String == "pkcs11")
        #expect((report["key"] as? String)?.contains("id=%01") == true)
        #expect(report["module"] as? String == hsm.module)
        #expect(report["iterations"] as? Int == 2)
        for field in [
            "verifyMs", "bareMs", "ratio", "helperStartMs", "ratioWithoutHelperStart", "inProcessLoadMs",
            "recordUnderLockMs", "recordWriteMs",
        ] {
            #expect(report[field] is Double, "\(field) in \(bench.output)")
        }
        // One helper per verify, started with the module's C_GetFunctionList and C_Initialize.
        #expect(report["helpersPerVerify"] as? Int == 1)
        #expect(report["helperStartCalls"] as? Int == 2)
        // The listing: slots, slot and token info, mechanisms, a session, two searches and each key's attributes.
        let listing = try #require(report["bareListingCalls"] as? Int)
        #expect(listing > 10)
        // The login and the answer: token info, a session, C_Login, the search, (EC: the curve, C_DeriveKey, the
        // value read twice, the object destroyed; RSA: C_DecryptInit, C_Decrypt), C_Logout, C_CloseSession.
        #expect(report["bareAnswerCalls"] as? Int == answerCalls)
        #expect(report["pkcs11CallsPerVerify"] as? Int == 2 + listing + answerCalls)

        // Refused before anything is asked: a key not bound to the user.
        let other = try cli(
            ["bench", "--token", "--pkcs11-module", hsm.module, "--token-uri", "pkcs11:token=none"], input: "")
        #expect(other.status == 6, "\(other.output)\(other.errors)")
        #expect(other.errors.contains("no usable PKCS#11 key is present") || other.errors.contains("bound to"))
        // The PKCS#11 options belong to --token.
        let usage = try cli(["bench", "--app", "pkcs11"], input: "")
        #expect(usage.status == 2)
        #expect(usage.errors.contains("--app applies to `bench --token`"), "\(usage.errors)")
    }
}
