import Foundation
import Testing
import TokenpinCore

@testable import TokenpinService

/// The next seal's challenge, made on another thread while the card works: the same fresh agreement
/// `freshAgreement` makes in line, handed over once, its failures thrown where it is taken.
@Suite struct AgreementInAdvanceTests {
    /// A binding to the card key `cardPublicKey` (a fresh X25519 key's when none is given).
    static func binding(algorithm: String? = nil, cardPublicKey: [UInt8]? = nil) throws -> TokenBinding {
        let publicKey = try cardPublicKey ?? X25519.generateKeyPair().publicKey
        return TokenBinding(
            serial: "D276000124010304000500001234", cardPublicKey: Data(publicKey),
            ephemeralPublicKey: Data(repeating: 7, count: 32), reader: "Reader A", algorithm: algorithm)
    }

    @Test("a fresh challenge the card's key answers with the secret handed over, in the reader the card was found")
    func madeInAdvance() throws {
        let card = try X25519.generateKeyPair()
        let binding = try Self.binding(cardPublicKey: card.publicKey)
        let agreement = try PINService.AgreementInAdvance(makeService(), binding: binding).take(reader: "Reader B")
        #expect(agreement.binding.ephemeralPublicKey != binding.ephemeralPublicKey, "a new challenge")
        #expect(agreement.binding.ephemeralPublicKey.count == 32)
        #expect(agreement.binding.cardPublicKey == binding.cardPublicKey)
        #expect(agreement.binding.reader == "Reader B")
        let answer = try X25519.sharedSecret(
            secretKey: card.secretKey, peerPublicKey: [UInt8](agreement.binding.ephemeralPublicKey))
        let same = agreement.secret.isEqual(to: answer)
        #expect(same, "the secret is what the card will answer to the challenge")
    }

    @Test("no reader known: the binding keeps the one it named")
    func readerKept() throws {
        let binding = try Self.binding()
        let agreement = try PINService.AgreementInAdvance(makeService(), binding: binding).take(reader: nil)
        #expect(agreement.binding.reader == "Reader A")
    }

    @Test("each agreement is its own: two in flight give two challenges")
    func twoInFlight() throws {
        let binding = try Self.binding()
        let service = makeService()
        let first = PINService.AgreementInAdvance(service, binding: binding)
        let second = PINService.AgreementInAdvance(service, binding: binding)
        let a = try second.take(reader: nil)
        let b = try first.take(reader: nil)
        #expect(a.binding.ephemeralPublicKey != b.binding.ephemeralPublicKey)
        let same = a.secret.isEqual(to: b.secret)
        #expect(!same)
    }

    @Test("a binding naming an unknown algorithm: the store's corrupt-record error, thrown where it is taken")
    func failureThrownAtTake() throws {
        let binding = try Self.binding(algorithm: "ed448")
        let service = makeService()
        #expect {
            _ = try PINService.AgreementInAdvance(service, binding: binding).take(reader: nil)
        } throws: { error in
            (error as? StoreError)?.code == .corrupt
                && (error as? StoreError)?.detail == "token slot names an unknown algorithm"
        }
    }
}
