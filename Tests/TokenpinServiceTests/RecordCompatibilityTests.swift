import Foundation
import Testing
import TokenpinCore
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// A record and its simulated card as tokenpin wrote them before bindings could name an algorithm (cv25519,
/// bound with `--generate-key`, PIN 482916, card PIN 123456): they must keep verifying.
enum RecordBeforeAlgorithms {
    static let record = #"""
        {
          "counter" : {
            "failures" : 0,
            "max" : 5,
            "recoveryFailures" : 0,
            "remaining" : 5
          },
          "created" : "2026-11-30T18:47:50Z",
          "policy" : {
            "fallback" : "allow",
            "mode" : "either"
          },
          "slots" : [
            {
              "created" : "2026-11-30T18:47:50Z",
              "kdf" : {
                "algorithm" : "argon2id13",
                "memoryKiB" : 8192,
                "passes" : 1,
                "salt" : "9Pw1Xf5incgpZXiG3Yom3g=="
              },
              "kind" : "pin",
              "nonce" : "7+wtyrqRJYOSqzOl113\/6x2VgKte1FjX",
              "wrappedKey" : "8bNL6CH1EbX0v73XWoo4fsLreebSQL9iFOwLYRKV+NCLVxZk4Zq0M4rI6goP8cGF"
            },
            {
              "created" : "2026-11-30T18:47:50Z",
              "kdf" : {
                "algorithm" : "blake2b",
                "memoryKiB" : 0,
                "passes" : 0,
                "salt" : "uiE7sHfZpPghqYnMRc9ZaA=="
              },
              "kind" : "recovery",
              "nonce" : "+06q2scFpT3y5u5DAI1KgcEtUii\/jA6o",
              "wrappedKey" : "u+kOlETZeGasZGn2JRjLJ56Y+J\/2OIXI1Y\/A\/A3jRSOHw4ZFOlZTOJQik9IEwKZm"
            },
            {
              "created" : "2026-11-30T18:47:50Z",
              "kdf" : {
                "algorithm" : "blake2b",
                "memoryKiB" : 0,
                "passes" : 0,
                "salt" : "VXMfDUv0bjPSGVuZ3xcGyQ=="
              },
              "kind" : "token",
              "nonce" : "mge\/9jrwu0FYEWB5LSYjDPXXuUe2CRBs",
              "token" : {
                "cardPublicKey" : "MmXzfSQVzEqv0QQESvsv36nmp7EwmihqulP7JhzQ\/mg=",
                "ephemeralPublicKey" : "Q7qNgtqQDqwlNzmWMqVXkcLf7fzvRPzhy48+kF7Y2Qc=",
                "reader" : "tokenpin virtual reader (simulated card)",
                "serial" : "FFFECE525174"
              },
              "wrappedKey" : "a5BRJaJNmyZznL4GarhAuAEdmgkDOe0OljMWYQobI6Vr6tFCvaq2TVMdScznUMi7"
            }
          ],
          "updated" : "2026-11-30T18:47:51Z",
          "user" : "root",
          "version" : 1
        }
        """#
    static let card = #"""
        {
          "certificate" : "",
          "keys" : [
            {
              "attributes" : "AQgAABEA",
              "caFingerprint" : "AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
              "fingerprint" : "AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
              "generationTime" : "AAAAAA==",
              "origin" : 0,
              "secret" : ""
            },
            {
              "attributes" : "EisGAQQBl1UBBQE=",
              "caFingerprint" : "AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
              "fingerprint" : "AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
              "generationTime" : "AAAAAA==",
              "origin" : 1,
              "secret" : "j6A6jcsoPSDNcF9bolHUTmvczLikLlG0H6vEJZIosFc="
            },
            {
              "attributes" : "AQgAABEA",
              "caFingerprint" : "AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
              "fingerprint" : "AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
              "generationTime" : "AAAAAA==",
              "origin" : 0,
              "secret" : ""
            }
          ],
          "language" : "",
          "lifeCycle" : "operational",
          "loginData" : "",
          "manufacturer" : 65534,
          "name" : "",
          "privateDOs" : [
            "",
            "",
            "",
            ""
          ],
          "pw1" : "MTIzNDU2",
          "pw1Retries" : 3,
          "pw1ValidForSeveralSignatures" : true,
          "pw3" : "MTIzNDU2Nzg=",
          "pw3Retries" : 3,
          "resetCode" : "",
          "resetCodeRetries" : 0,
          "serial" : 3461501300,
          "sex" : "",
          "signatureCounter" : 0,
          "url" : "",
          "version" : 1
        }
        """#
}

@Suite struct RecordCompatibilityTests {
    @Test("a cv25519 record written before RSA and NIST/brainpool support still verifies with its card")
    func oldRecordVerifies() throws {
        let directory = NSTemporaryDirectory() + "/tokenpin-compat-\(UUID().uuidString)"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try RecordBeforeAlgorithms.record.write(toFile: directory + "/root.json", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory + "/root.json")
        try RecordBeforeAlgorithms.card.write(toFile: directory + "/card.json", atomically: true, encoding: .utf8)
        let card = try SimulatedCard(stateFile: directory + "/card.json")
        var configuration = Configuration()
        configuration.kdfMemoryMiB = 8
        configuration.kdfPasses = 1
        let service = PINService(
            store: RecordStore(directory: directory), configuration: configuration, user: "root",
            time: ManualTime(), cards: readers([("Reader A", card)]))
        #expect(try service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
        // The re-sealed slot keeps the old form and opens again.
        let binding = try #require(try service.store.load(user: "root")?.slot(.token)?.token)
        #expect(binding.algorithm == nil && binding.cardPublicExponent == nil)
        #expect(try service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
        #expect(try verify(service, "482916") == .verified(method: .pin))
    }
}
