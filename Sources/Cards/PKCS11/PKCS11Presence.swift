internal import CP11Kit
import TokenpinCore

// Whether a bound token is still in its slot, for the daemon's card-removal lock and reader events: the helper
// answers `presence` requests, asked at a bounded interval by a watcher that keeps one helper for the token.
//
// Where the module supports `C_WaitForSlotEvent` (OpenSC does, SoftHSM does not) the helper asks it first, without
// blocking: no pending event and the token seen last time means it is still there, one call. Otherwise (or after an
// event) it reads the slot list again (some modules notice a token leaving only then), the slot's flags
// (`CKF_TOKEN_PRESENT`) and the token's serial number. A blocking wait is not used: it would hold the helper's one
// thread past any deadline, and a watcher must be able to stop the helper at any time.

extension PKCS11Tokens {
    /// The token `reference` names, if it is still in its slot; `.noToken` when the slot is empty, `.tokenChanged`
    /// when another token is there.
    func presence(_ reference: PKCS11KeyReference) throws(PKCS11TokenError) -> PKCS11TokenInfo {
        guard modules.indices.contains(reference.moduleIndex) else {
            throw .invalidRequest("no module \(reference.moduleIndex) in this helper")
        }
        let module = modules[reference.moduleIndex]
        if let last = lastPresent, last.reference == reference, module.pendingSlotEvent() == false {
            return last.token
        }
        lastPresent = nil
        _ = try? module.slots(tokenPresent: false)
        let slot = try Self.map(module) { () throws(PKCS11Failure) in try module.slotInfo(reference.slot) }
        guard slot.flags & CK_FLAGS(CKF_TOKEN_PRESENT) != 0 else {
            throw .noToken("the token with serial \(reference.serial) left slot \(reference.slot) of \(module.name)")
        }
        let token = try status(reference)
        lastPresent = (reference, token)
        return token
    }
}

extension PKCS11Helper {
    /// Whether `key`'s token is still in the slot it was listed in (the same serial number); false when it left or
    /// another token took its place.
    ///
    /// - Throws: when the helper or the module fails otherwise (hung, crashed): the caller cannot tell, and starts
    ///   another helper.
    package func isPresent(_ key: PKCS11Key) throws(PKCS11TokenError) -> Bool {
        let reply = try exchange(.presence(PKCS11KeyReference(key)))
        switch consume reply {
        case .token(_, let calls):
            lastCalls = calls
            return true
        case .failure(let error, let calls):
            lastCalls = calls
            if error.meansTokenLeft { return false }
            throw error
        default:
            throw unexpected("the token's presence")
        }
    }
}

extension PKCS11TokenError {
    /// The error says the token is not (or no longer) in its slot.
    package var meansTokenLeft: Bool {
        switch self {
        case .noToken, .tokenChanged: true
        case .module(let error, _, _): error.isTokenGone || error == .slotIDInvalid
        default: false
        }
    }
}
