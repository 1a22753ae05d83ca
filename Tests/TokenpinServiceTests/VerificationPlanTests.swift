import Foundation
import Testing
import TokenpinCore
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// The verifier chooses one plan from the record, the configuration, the method asked for and `--serial`, before
/// anything is asked; the caller (the CLI, tokenpind) checks none of it beforehand.
@Suite struct VerificationPlanTests {
    @Test func aRecordWithoutATokenIsVerifiedByThePINAlone() throws {
        let setup = try tokenSetup(bind: false)
        let record = try setup.service.loadRecord()
        #expect(try setup.service.verificationPlan(for: record, method: nil) == .pin)
        #expect(try setup.service.verificationPlan(for: record, method: .pin) == .pin)
        #expect(throws: ServiceError.tokenNotEnabled) {
            try setup.service.verificationPlan(for: record, method: .token)
        }
    }

    @Test(arguments: [
        (FallbackPolicy.allow, VerificationMethod?.none, VerificationPlan.token(fallback: true)),
        (.deny, nil, .token(fallback: false)),
        (.allow, .token, .token(fallback: false)),
        (.deny, .token, .token(fallback: false)),
        (.allow, .pin, .pin),
        (.deny, .pin, .pin),
    ])
    func aCardBoundInEither(fallback: FallbackPolicy, method: VerificationMethod?, plan: VerificationPlan) throws {
        let setup = try tokenSetup(mode: .either, fallback: fallback)
        #expect(try setup.service.verificationPlan(for: setup.service.loadRecord(), method: method) == plan)
    }

    @Test func aCardBoundInBothNeedsTheCompositeSlot() throws {
        let setup = try tokenSetup(mode: .both)
        let record = try setup.service.loadRecord()
        #expect(try setup.service.verificationPlan(for: record, method: nil) == .composite)
        #expect(try setup.service.verificationPlan(for: record, method: .token) == .composite)
        #expect(throws: ServiceError.tokenUnavailable("mode = both: the PIN alone cannot verify")) {
            try setup.service.verificationPlan(for: record, method: .pin)
        }
    }

    @Test func bothFromTheConfigurationNeedsTheTokenAndThePIN() throws {
        var setup = try tokenSetup(mode: .either)
        setup.service.configuration.mode = .both
        let record = try setup.service.loadRecord()
        #expect(try setup.service.verificationPlan(for: record, method: nil) == .tokenAndPIN)
        #expect(
            throws: ServiceError.tokenUnavailable("mode = both (configuration): the PIN alone cannot verify")
        ) {
            try setup.service.verificationPlan(for: record, method: .pin)
        }
    }

    /// `--serial` naming another card than the bound one: refused by the service before anything is asked or sent
    /// to a card (the CLI used to check this itself with `types()` before calling `verify`).
    @Test(arguments: [VerificationMethod?.none, .token])
    func aSerialNamingAnotherCardIsRefusedBeforeAnythingIsAsked(method: VerificationMethod?) throws {
        var setup = try tokenSetup()
        let bound = try #require(try setup.service.boundCard()).serial
        setup.service.selection.serial = "99999999"
        let script = ScriptedInteraction([])
        let refusal = ServiceError.tokenUnavailable(
            "--serial 99999999 is not the card bound to alice (card \(cardLabel(serial: bound))); "
                + "the card PIN goes to no other card")
        #expect(throws: refusal) { try setup.service.verify(script, method: method) }
        #expect(script.prompts.isEmpty, "nothing was asked: \(script.prompts.map(\.name))")
        #expect(cardPINTries(setup.card) == 3, "no card PIN try was spent")
    }

    @Test func aSerialNamingTheBoundCardOrThePINAloneIsNotRefused() throws {
        var setup = try tokenSetup()
        let bound = try #require(try setup.service.boundCard()).serial
        let record = try setup.service.loadRecord()
        // The serial's last 8 hex digits, the whole identity as `readers` shows it (as `bench --token` passes it).
        for named in ["00001111", bound, bound.lowercased()] {
            setup.service.selection.serial = named
            #expect(try setup.service.verificationPlan(for: record, method: nil) == .token(fallback: true), "\(named)")
        }
        setup.service.selection.serial = "99999999"
        #expect(
            try setup.service.verify(ScriptedInteraction(["482916"]), method: .pin).outcome == .verified(method: .pin))
    }
}
