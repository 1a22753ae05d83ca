import Foundation
import Testing
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// Public keys a card may claim that tokenpin cannot use: judged when the card is read, so `readers` says why and
/// `toggle token on` refuses before asking for anything (exit 6), never a crypto error after the PIN (exit 74).
enum HostileKey: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case p256Generator, p256Double, p256MinusGenerator, p256OffCurve
    case cv25519BasePoint, cv25519SmallOrder, cv25519ZeroScalar
    case rsaEvenExponent, rsaExponentOne, rsaEvenModulus, rsaShortModulus
    case pivP256Generator, pivP256MinusSeven, pivRSAEvenExponent, pivRSAExponentOne

    var testDescription: String { rawValue }

    /// The application the key is read through.
    var application: TokenApplicationKind { rawValue.hasPrefix("piv") ? .piv : .openpgp }

    /// What the refusal names.
    var reason: String {
        switch self {
        case .p256Generator, .p256Double, .p256MinusGenerator, .cv25519BasePoint, .cv25519ZeroScalar,
            .pivP256Generator, .pivP256MinusSeven:
            "known private key"
        case .p256OffCurve: "not a point of the curve"
        case .cv25519SmallOrder: "small order"
        case .rsaEvenExponent, .rsaExponentOne, .pivRSAEvenExponent, .pivRSAExponentOne: "exponent"
        case .rsaEvenModulus: "modulus is even"
        case .rsaShortModulus: "2040-bit modulus"
        }
    }

    /// The OpenPGP attributes the card's decryption key slot is set to (the real key generated under them is
    /// replaced by the hostile one in what the card answers).
    var attributes: [UInt8] {
        switch self {
        case .cv25519BasePoint, .cv25519SmallOrder, .cv25519ZeroScalar:
            [0x12, 0x2B, 0x06, 0x01, 0x04, 0x01, 0x97, 0x55, 0x01, 0x05, 0x01]
        case .rsaEvenExponent, .rsaExponentOne, .rsaEvenModulus, .rsaShortModulus: CardKeyAttributes.rsa(2048)
        default: CardKeyAttributes.nistP256
        }
    }
}

/// The P-256 order less one: its multiple of G is -G.
let p256OrderMinusOne = Hex.decode("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632550") ?? []

/// `scalar` times the P-256 generator, uncompressed.
func p256Multiple(_ scalar: [UInt8]) throws -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: 32 - scalar.count) + scalar
    return try EllipticCurveDH.publicPoint(for: SecretBytes(consuming: &bytes), on: .nistP256)
}

/// A real RSA 2048 modulus (any will do; its private key is not needed).
let sampleModulus: [UInt8] = {
    guard let key = try? RSAKeys.generate(bits: 2048) else { return [] }
    return key.modulus
}()

extension HostileKey {
    /// The OpenPGP public key template (`7F49`) the card answers GENERATE ASYMMETRIC KEY PAIR (read) with.
    func openPGPTemplate() throws -> [UInt8] {
        func template(_ children: [TLV]) -> [UInt8] { TLV(tag: 0x7F49, children: children).encoded + [0x90, 0x00] }
        switch self {
        case .p256Generator: return template([TLV(tag: 0x86, value: try p256Multiple([1]))])
        case .p256Double: return template([TLV(tag: 0x86, value: try p256Multiple([2]))])
        case .p256MinusGenerator: return template([TLV(tag: 0x86, value: try p256Multiple(p256OrderMinusOne))])
        case .p256OffCurve:
            var point = try p256Multiple([5])
            point[64] ^= 1
            return template([TLV(tag: 0x86, value: point)])
        case .cv25519BasePoint: return template([TLV(tag: 0x86, value: [9] + [UInt8](repeating: 0, count: 31))])
        case .cv25519SmallOrder: return template([TLV(tag: 0x86, value: [1] + [UInt8](repeating: 0, count: 31))])
        case .cv25519ZeroScalar:
            var zero = [UInt8](repeating: 0, count: 32)
            let point = try X25519.publicKey(for: SecretBytes(consuming: &zero))
            return template([TLV(tag: 0x86, value: point)])
        case .rsaEvenExponent:
            return template([TLV(tag: 0x81, value: sampleModulus), TLV(tag: 0x82, value: [0x01, 0x00, 0x00])])
        case .rsaExponentOne: return template([TLV(tag: 0x81, value: sampleModulus), TLV(tag: 0x82, value: [0x01])])
        case .rsaEvenModulus:
            var modulus = sampleModulus
            modulus[modulus.count - 1] &= 0xFE
            return template([TLV(tag: 0x81, value: modulus), TLV(tag: 0x82, value: [0x01, 0x00, 0x01])])
        case .rsaShortModulus:
            return template([
                TLV(tag: 0x81, value: Array(sampleModulus.dropLast())), TLV(tag: 0x82, value: [0x01, 0x00, 0x01]),
            ])
        default: return []
        }
    }

    /// The YubiKey metadata (`F7`) the PIV card answers for slot 9D with.
    func pivMetadata() throws -> [UInt8] {
        let policy: [UInt8] = [0x02, 0x02, 0x02, 0x01, 0x03, 0x01, 0x01]
        switch self {
        case .pivP256Generator, .pivP256MinusSeven:
            var seven = p256OrderMinusOne
            seven[31] = 0x50 - 6  // n - 7
            let point = try p256Multiple(self == .pivP256Generator ? [1] : seven)
            return [0x01, 0x01, 0x11] + policy + TLV(tag: 0x04, children: [TLV(tag: 0x86, value: point)]).encoded
                + [0x90, 0x00]
        default:
            let exponent: [UInt8] = self == .pivRSAExponentOne ? [0x01] : [0x01, 0x00, 0x00]
            let key = TLV(tag: 0x04, children: [TLV(tag: 0x81, value: sampleModulus), TLV(tag: 0x82, value: exponent)])
            return [0x01, 0x01, 0x07] + policy + key.encoded + [0x90, 0x00]
        }
    }
}

@Suite struct CardKeyJudgementTests {
    /// A service with a PIN and one card whose key answers are `key`'s.
    static func setup(_ key: HostileKey) throws -> (PINService, SimulatedCard) {
        let card: SimulatedCard
        switch key.application {
        case .openpgp:
            card = try newCard()
            try generateDecryptionKey(card, attributes: key.attributes)
            card.faults = CardFaults(rules: [.init(instruction: 0x47, fault: .answer(try key.openPGPTemplate()))])
        case .piv:
            let fixture = try PIVFixture(.yubikey)
            try fixture.generate(
                .keyManagement, key == .pivP256Generator || key == .pivP256MinusSeven ? .eccP256 : .rsa2048)
            card = fixture.card
            card.reset()
            card.faults = CardFaults(rules: [.init(instruction: 0xF7, fault: .answer(try key.pivMetadata()))])
        case .pkcs11:
            preconditionFailure("a card application: PKCS#11 tokens are tested with SoftHSM (TokenpinPKCS11Tests)")
        }
        var service = makeService()
        service = PINService(
            store: service.store, configuration: service.configuration, user: "alice", time: ManualTime(),
            cards: readers([("Reader A", card)]))
        service.selection = CardSelection(application: key.application)
        try enrol(service)
        return (service, card)
    }

    @Test(arguments: HostileKey.allCases)
    func aKeyTokenpinCannotUseIsJudgedWhenTheCardIsRead(key: HostileKey) throws {
        let (service, _) = try Self.setup(key)
        let reader = try #require(try service.listReaders().first)
        #expect(!reader.usable, "readers shows the card as usable")
        #expect(reader.unusableReason?.contains(key.reason) == true, "\(reader.unusableReason ?? "no reason")")

        let script = ScriptedInteraction(["482916", cardPIN])
        #expect {
            _ = try service.enableToken(script)
        } throws: { error in
            guard let error = error as? ServiceError, case .tokenUnavailable(let why) = error else {
                Issue.record("\(error)")
                return false
            }
            return ExitCode(error) == .tokenUnavailable && why.contains(key.reason)
        }
        #expect(script.prompts.isEmpty, "nothing was asked: \(script.prompts)")
        #expect(try service.store.load(user: "alice")?.counter.remaining == 5)
    }

    @Test func aNamedPIVSlotIsJudgedBeforeThePINToo() throws {
        let (service, _) = try Self.setup(.pivRSAEvenExponent)
        let script = ScriptedInteraction(["482916", cardPIN])
        #expect {
            _ = try service.enableToken(script, slot: "9d")
        } throws: { error in
            (error as? ServiceError).map { ExitCode($0) == .tokenUnavailable && $0.message.contains("exponent") }
                ?? false
        }
        #expect(script.prompts.isEmpty)
    }
}
