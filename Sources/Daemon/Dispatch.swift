import TokenpinCore
import TokenpinProtocol
import TokenpinService

// One request: authorization, the lock order, the operation and its reply (what it leaves behind: Outcomes.swift).
extension Daemon {
    /// Runs one request; false when the connection must close (the client broke the protocol or left).
    ///
    /// The order is fixed, so no two operations can wait for each other in a cycle: the login password (when
    /// the operation creates a first way in), then the user's lock (bounded wait), then inside the service the
    /// record's `flock`, then key-derivation memory around each derivation only. The lock is given back before
    /// the reply is written, and writes are bounded by the send timeout, so a client that does not read holds
    /// nothing that anyone else needs.
    ///
    /// Who asks decides which lock an operation takes: the user's own and local attempts share the user's lock;
    /// a remote or other attempt (sshd, `su victim`) takes a lock of its own per remote host or invoking uid, so
    /// one parked at its prompt never holds what the user's own verification needs. Such attempts are also held
    /// to a share per target user and per source, remote host or invoking uid (`InFlightAttempts`), and PAM's
    /// prompts to `daemon-pam-prompt-timeout`.
    func perform(_ request: Request, channel: LineChannel, peer: Peer) -> Bool {
        let configuration = self.configuration
        let user: String
        switch Authorization.target(peer: peer, requested: request.user) {
        case .success(let target): user = target
        case .failure(let error):
            logger.warning("refused", [("peer.uid", String(peer.uid)), ("op", request.operation.name)])
            return (try? channel.send(error.protocolMessage)) != nil
        }
        let context = Authorization.context(peer: peer, user: user, invoker: request.invoker)
        operations.increment()
        defer { operations.decrement() }
        let fromPAM = peer.isRoot && request.invoker != nil
        let relay = RelayInteraction(
            channel: channel, daemon: self, user: user,
            promptTimeoutSeconds: fromPAM
                ? configuration.daemon.pamPromptTimeoutSeconds : configuration.daemon.promptTimeoutSeconds,
            newPINAttempts: min(max(1, request.newPINAttempts ?? 1), 5))
        let service = service(
            for: request, user: user, peer: peer, context: context, configuration: configuration)
        logger.debug(
            "request",
            [
                ("peer.uid", String(peer.uid)), ("user", user), ("op", request.operation.name),
                ("class", context.class.rawValue),
            ])
        var reply: Reply?
        var error: ServiceError?
        do throws(ServiceError) {
            reply = try admitAndExecute(
                request, service: service, user: user, relay: relay, peer: peer, configuration: configuration)
        } catch let caught {
            error = caught
        }
        if let error, request.operation.isPINAttempt {
            audit.record(AuditEvent(.verifyFailed, user: user, context: context, result: error.code))
        }
        return send(reply.take(), or: error, relay: relay, channel: channel)
    }

    /// The service as this request and peer may use it: the card selection asked for, the keypad only ever turned
    /// off, the shared derivation budget, and for a peer that is not root only its own cards.
    private func service(
        for request: Request, user: String, peer: Peer, context: AttemptContext, configuration: Configuration
    ) -> PINService {
        let selection = CardSelection(
            reader: request.reader ?? configuration.reader, serial: request.serial, application: request.application,
            tokenURI: request.tokenURI)
        var requested = configuration
        if request.pinpad == false { requested.pinpad = .off }  // `--no-pinpad`: only ever off, never on
        var service = PINService(
            store: store, configuration: requested, user: user, logger: logger,
            cards: options.cards, selection: selection)
        service.derivationGate = BudgetGate(
            budget: budget, waitSeconds: Double(configuration.daemon.waitTimeoutSeconds),
            capacityMiB: configuration.daemon.kdfMemoryMiB)
        // A root daemon must not lend its pcscd rights: a user reaches only the card bound to their own record, or
        // to bind, a card no other record binds when `card-bind` lets them.
        service.cardScope = peer.isRoot ? .any : .boundCardOnly
        service.revokedCards = revokedCards
        if !peer.isRoot {
            service.cardAccess = DaemonCardAccess(
                store: store, policy: configuration.daemon.cardBind, peer: peer, sessions: sessions, claims: cardClaims)
        }
        service.attempt = context
        service.callerIsRoot = peer.isRoot
        service.invokerNames = { Peer.loginName(uid: $0) }
        return service
    }

    /// Admits the request, takes what its operation holds (`OperationLock`) in the fixed order, and runs it.
    /// Everything taken is given back when this returns, before the client is written to: the reply waits for no
    /// one.
    private func admitAndExecute(
        _ request: Request, service: PINService, user: String, relay: RelayInteraction, peer: Peer,
        configuration: Configuration
    ) throws(ServiceError) -> Reply {
        let context = service.attempt
        defer { if !peer.isRoot { cardClaims.release(user) } }
        try admit(request.operation, user: user, context: context, configuration: configuration)
        let untrusted = context.class.isTrusted ? nil : InFlightAttempts.source(of: context)
        if let untrusted, !untrustedAttempts.begin(user: user, source: untrusted) {
            throw .busy("too many remote and other attempts for \(user), or from this source, at once")
        }
        defer { if let untrusted { untrustedAttempts.end(user: user, source: untrusted) } }
        return try locked(request, service: service, user: user, relay: relay, peer: peer, configuration)
    }

    /// Checks the login password of a first way in, then takes the user's lock (bounded wait) around the operation.
    private func locked(
        _ request: Request, service: PINService, user: String, relay: RelayInteraction, peer: Peer,
        _ configuration: Configuration
    ) throws(ServiceError) -> Reply {
        var checkedPassword: SecretBytes?  // the login password checked before an enrolment, for the login keyring
        if request.operation.lock == .userAfterFirstWayIn {
            checkedPassword = try checkFirstWayIn(peer: peer, user: user, relay: relay, configuration: configuration)
        }
        guard request.operation.lock != .none else {
            return try execute(
                request, service: service, user: user, relay: relay, configuration: configuration, peer: peer)
        }
        let lockKey = Self.lockKey(user: user, context: service.attempt)
        guard userLocks.lock(lockKey, waitingAtMost: Double(configuration.daemon.waitTimeoutSeconds)) else {
            throw .busy("another operation for \(user) is running")
        }
        defer { userLocks.unlock(lockKey) }
        return try execute(
            request, service: service, user: user, relay: relay, configuration: configuration, peer: peer,
            checkedPassword: checkedPassword.take())
    }

    /// Writes the reply, or the error; false when the connection must close (the relay broke on the client).
    private func send(_ reply: consuming Reply?, or error: ServiceError?, relay: RelayInteraction, channel: LineChannel)
        -> Bool
    {
        if let failure = relay.failure {
            if failure.code != .closed && failure.code != .truncated && failure.code != .io {
                try? channel.send(failure.message)
            }
            if var unsent = reply.take() { unsent.wipe() }
            return false
        }
        if var reply = reply.take() {
            let sent = (try? channel.write(reply.line)) != nil
            reply.wipe()
            return sent
        }
        guard let error else { return true }
        return (try? channel.send(error.protocolMessage)) != nil
    }

    /// `enrol` and `import` create a first way in: a user (not root) proves who they are with their login password
    /// first (`enrol-auth = password`), before any lock is taken. An existing record is refused before the password
    /// is asked (the operation checks again under the lock).
    ///
    /// The check is throttled per uid as a login is (`PasswordThrottle`): one at a time, and after a wrong password
    /// a delay during which a check is answered `delayed` without running PAM.
    /// With `login-keyring = on`, the password PAM accepted comes back for the enrolment to seal.
    func checkFirstWayIn(
        peer: Peer, user: String, relay: RelayInteraction,
        configuration: Configuration
    ) throws(ServiceError) -> SecretBytes? {
        guard !peer.isRoot, configuration.daemon.enrolAuth == .password else { return nil }
        let existing: EnrolmentRecord?
        do {
            existing = try store.load(user: user)
        } catch {
            throw .store(error)
        }
        if existing != nil { throw .alreadyEnrolled(user: user, path: store.recordPath(for: user)) }
        let context = AttemptContext(class: .own, invokerUID: peer.uid, service: configuration.daemon.enrolPAMService)
        if let wait = passwordThrottle.begin(uid: peer.uid) {
            audit.record(
                AuditEvent(.passwordRefused, user: user, context: context, method: "password", result: "delayed"))
            throw .passwordDelayed(seconds: wait)
        }
        var outcome = PasswordThrottle.Outcome.notTried
        defer { passwordThrottle.end(uid: peer.uid, outcome) }
        let check = LoginPasswordCheck(service: configuration.daemon.enrolPAMService)
        let kept: SecretBytes?
        do {
            kept = try check.verify(user: user, relay, keep: configuration.loginKeyring)
        } catch {
            if case .passwordRejected = error {
                outcome = .rejected
                logger.warning("login password refused before enrolment", [("user", user)])
                hub.publish(user: user, name: "passwordRejected", fields: [])
                audit.record(
                    AuditEvent(.passwordRefused, user: user, context: context, method: "password", result: "rejected"))
            }
            throw error
        }
        outcome = .accepted
        logger.info("login password checked before enrolment", [("user", user)])
        audit.record(
            AuditEvent(.passwordAccepted, user: user, context: context, method: "password", result: "accepted"))
        return kept
    }

    /// Refuses, before anything is asked, what a class may not do: a remote or other attempt only verifies or
    /// changes the PIN, and only as `pam-remote` and `pam-other-user` allow.
    func admit(
        _ operation: TokenpinProtocol.Operation, user: String, context: AttemptContext, configuration: Configuration
    ) throws(ServiceError) {
        guard !context.class.isTrusted else { return }
        guard operation.isPINAttempt else {
            throw .permissionDenied("a \(context.class.rawValue) PAM attempt may only verify or change the PIN")
        }
        if context.class == .remote, configuration.daemon.pamRemote == .ignore {
            throw .ignored("tokenpind does not answer remote logins (pam-remote = ignore); nothing was asked")
        }
        if context.class == .other, configuration.daemon.pamOtherUser == .deny {
            throw .permissionDenied(
                "pam-other-user = deny: another user's PAM stack (\(context.service ?? "su")) may not verify as "
                    + "\(user); nothing was asked")
        }
    }

    /// The lock an operation takes: the user's, shared by own and local attempts; one per remote host for remote
    /// attempts and one per invoking uid for other users', so none of those waits for, or holds, the user's.
    static func lockKey(user: String, context: AttemptContext) -> String {
        switch context.class {
        case .own, .local: user
        case .remote: user + "\u{1}remote\u{1}" + (context.rhost ?? "")
        case .other: user + "\u{1}other\u{1}" + String(context.invokerUID ?? 0)
        }
    }

    /// Runs the operation and builds the final message.
    ///
    /// This is the one place a decoded request becomes a call of the service: an operation with behaviour of the
    /// daemon's own (counted attempts, audit, events, the login keyring, `import`) has its case here; any other is a
    /// `PerformableOperation` and runs through `served`. What is neither (`watch`, which `Connection` streams) is
    /// refused.
    func execute(
        _ request: Request, service: PINService, user: String, relay: RelayInteraction,
        configuration: Configuration, peer: Peer, checkedPassword: consuming SecretBytes? = nil
    ) throws(ServiceError) -> Reply {
        let context = service.attempt
        switch request.operation {
        case .enrol:
            let result = try service.enrol(relay)
            if let password = checkedPassword.take() { sealAfterEnrolment(password, service: service, user: user) }
            return Reply.enrolment(result)
        case .verify(let verify) where verify.loginKeyring || configuration.loginKeyring:
            return try verifyForLoginKeyring(
                verify, invoker: request.invoker, service: service, user: user, relay: relay,
                configuration: configuration, peer: peer)
        case .sealLoginPassword:
            return try sealLoginPassword(service: service, user: user, relay: relay, configuration: configuration)
        case .verify(let verify):
            return counted(try service.verify(relay, method: verify.method), user: user, context: context, success: nil)
        case .derive(let derive):
            return try self.derive(derive, service: service, user: user, relay: relay)
        case .change:
            return counted(try service.change(relay), user: user, context: context, success: .changed)
        case .reset(let reset) where reset.administrator:
            return try administratorReset(service: service, user: user, relay: relay, peer: peer)
        case .reset:
            return counted(try service.reset(relay), user: user, context: context, success: .reset)
        case .toggle(let toggle):
            return try self.toggle(toggle, service: service, user: user, relay: relay)
        case .cardChangePIN:
            return try cardPIN(unblockWithAdminPIN: nil, service: service, user: user, relay: relay)
        case .cardUnblock(let unblock):
            return try cardPIN(unblockWithAdminPIN: unblock.withAdminPIN, service: service, user: user, relay: relay)
        case .unenrol(let unenrol):
            return try self.unenrol(unenrol, service: service, user: user, relay: relay, peer: peer)
        case .import(let values):
            let path = try importRecord(values.record, user: user, configuration: configuration, peer: peer)
            audit.record(AuditEvent(.imported, user: user, context: context, result: "imported"))
            return Reply(.result(exitCode: 0, fields: [JSONMember("record", .text(path))]))
        default:
            guard let operation = request.operation.performable else {
                throw .input("\(request.operation.name) is not an operation")
            }
            return try served(operation, service: service, relay: relay)
        }
    }

    /// Runs an operation that has no behaviour of the daemon's own, as its declaration says: on the service, its
    /// outcome written as the result's fields.
    private func served<Performed: PerformableOperation>(
        _ operation: Performed, service: PINService, relay: RelayInteraction
    ) throws(ServiceError) -> Reply {
        let outcome = try operation.run(on: service, relay)
        return Reply(
            .result(
                exitCode: Int(operation.exitCode(for: outcome).rawValue),
                fields: operation.resultFields(for: outcome)))
    }

    /// The reply to a counted attempt (verify, change, reset), once its outcome is published and audited.
    private func counted(_ report: VerifyReport, user: String, context: AttemptContext, success: Event?) -> Reply {
        publishOutcome(report, user: user, success: success)
        auditOutcome(report, user: user, context: context)
        return Reply(.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields))
    }

    /// `reset` by root without the recovery key: a new PIN, the lock cleared, a warning in the log.
    private func administratorReset(service: PINService, user: String, relay: RelayInteraction, peer: Peer)
        throws(ServiceError) -> Reply
    {
        guard peer.isRoot else {
            throw .permissionDenied("only root resets a PIN without the recovery key")
        }
        let result = try service.administratorReset(relay)
        logger.warning("PIN reset by root without the recovery key", [("user", user), ("peer.uid", "0")])
        hub.publish(user: user, name: Event.reset.name, fields: [JSONMember("method", .text("administrator"))])
        return Reply.enrolment(result)
    }

    /// `unenrol`: after a counted verification, or by root without one (`admin`).
    private func unenrol(
        _ unenrol: Operation.Unenrol, service: PINService, user: String, relay: RelayInteraction, peer: Peer
    ) throws(ServiceError) -> Reply {
        let context = service.attempt
        if unenrol.administrator, !peer.isRoot {
            throw .permissionDenied("only root removes a record without a verification")
        }
        let report = try service.unenrol(relay, method: unenrol.method, administrator: unenrol.administrator)
        publishOutcome(report, user: user, success: .unenrolled)
        if !unenrol.administrator { auditOutcome(report, user: user, context: context) }
        return Reply(.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields))
    }

    /// `derive`: the application key after a verification; the key is in the reply and nowhere else.
    private func derive(_ derive: Operation.Derive, service: PINService, user: String, relay: RelayInteraction)
        throws(ServiceError) -> Reply
    {
        let context = service.attempt
        let application = derive.application
        let result = try service.derive(relay, application: application, method: derive.method)
        publishOutcome(result.report, user: user, success: nil)
        auditOutcome(result.report, user: user, context: context)
        if result.key != nil {
            // The application's name only: the key is in the reply and nowhere else.
            logger.info("key released", [("user", user), ("app", application.rawValue)])
            hub.publish(
                user: user, name: DeriveWire.releasedEvent,
                fields: [JSONMember("app", .text(application.rawValue))])
        }
        return Reply.derived(result)
    }

    /// `toggle`: the PIN (always on) or the token, switched on (bound) or off after a counted verification.
    private func toggle(_ toggle: Operation.Toggle, service: PINService, user: String, relay: RelayInteraction)
        throws(ServiceError) -> Reply
    {
        let context = service.attempt
        guard toggle.type == .token else {
            try service.togglePIN(on: toggle.on, relay)
            return Reply(
                .result(
                    exitCode: 0, fields: [JSONMember("authType", .text("pin")), JSONMember("enabled", .bool(true))])
            )
        }
        let on = toggle.on
        let report =
            on
            ? try service.enableToken(
                relay, generateKey: toggle.generateKey, assumeYes: toggle.assumeYes, mode: toggle.mode,
                slot: toggle.slot)
            : try service.disableToken(relay, method: toggle.method)
        publishOutcome(report, user: user, success: .typeChanged(type: .token, enabled: on))
        auditOutcome(report, user: user, context: context)
        // The counted PIN check cleared what remote and other attempts did: the user is told here too.
        if let notice = report.otherAttempts { relay.report(.otherAttempts(notice)) }
        if case .verified(let method) = report.outcome {
            audit.record(
                AuditEvent(
                    on ? .bound : .unbound, user: user, context: context, method: method.rawValue,
                    result: on ? "bound" : "unbound"))
        }
        let serial = (try? service.types())?.first { $0.type == .token }?.serial
        return Reply(
            .result(
                exitCode: Int(report.exitCode.rawValue),
                fields: report.protocolFields + [
                    JSONMember("authType", .text("token")), JSONMember("enabled", .bool(on)),
                    JSONMember("serial", serial.map(JSONValue.text) ?? .null),
                ]))
    }

    /// `card-change-pin` and `card-unblock`: the card's own PIN; a change or a refusal is an event and a log line
    /// like the PIN's own outcomes.
    ///
    /// `unblockWithAdminPIN` nil: a change; else an unblock, with the admin PIN or with the Reset Code.
    private func cardPIN(
        unblockWithAdminPIN: Bool?, service: PINService, user: String, relay: RelayInteraction
    ) throws(ServiceError) -> Reply {
        // A card PIN that is changed, or refused, is an event and a log line like the PIN's own outcomes.
        let changing = unblockWithAdminPIN == nil
        do {
            if let admin = unblockWithAdminPIN {
                try service.unblockCardPIN(relay, admin: admin)
            } else {
                try service.changeCardPIN(relay)
            }
        } catch {
            if case .cancelled = error { throw error }
            logger.warning(
                changing ? "card PIN not changed" : "card PIN not unblocked",
                [("user", user), ("reason", error.message)])
            hub.publish(user: user, name: "cardPINFailed", fields: [JSONMember("reason", .text(error.message))])
            throw error
        }
        logger.info(changing ? "card PIN changed" : "card PIN unblocked", [("user", user)])
        hub.publish(user: user, name: changing ? "cardPINChanged" : "cardPINUnblocked", fields: [])
        return Reply(.result(exitCode: 0, fields: []))
    }
}

extension TokenpinProtocol.Operation {
    /// Whether the operation spends a PIN try: the only ones a remote or other attempt may run, and the ones whose
    /// failures the audit trail records.
    var isPINAttempt: Bool {
        switch self {
        case .verify, .change: true
        default: false
        }
    }
}
