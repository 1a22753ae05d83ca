import TokenpinCore
import TokenpinProtocol
import TokenpinService

// One request: authorization, the lock order, the operation, and its reply and events.
extension Daemon {
    /// Runs one request; false when the connection must close (the client broke the protocol or left).
    ///
    /// The order is fixed, so no two operations can wait for each other in a cycle: the login password (when
    /// the operation creates a first way in), then the user's lock (bounded wait), then inside the service the
    /// record's `flock`, then key-derivation memory around each derivation only. The lock is given back before
    /// the reply is written, and writes are bounded by the send timeout, so a client that does not read holds
    /// nothing that anyone else needs.
    func perform(_ request: Request, channel: LineChannel, peer: Peer) -> Bool {
        let configuration = self.configuration
        let user: String
        switch Authorization.target(peer: peer, requested: request.user) {
        case .success(let target): user = target
        case .failure(let error):
            logger.warning("refused", [("peer.uid", String(peer.uid)), ("op", request.operation.rawValue)])
            return (try? channel.send(error.protocolMessage)) != nil
        }
        operations.increment()
        defer { operations.decrement() }
        let relay = RelayInteraction(
            channel: channel, daemon: self, user: user,
            promptTimeoutSeconds: configuration.daemonPromptTimeoutSeconds,
            newPINAttempts: min(max(1, request.newPINAttempts ?? 1), 5))
        let selection = CardSelection(
            reader: request.reader ?? configuration.reader, serial: request.serial, application: request.application)
        var service = PINService(
            store: store, configuration: configuration, user: user, logger: logger,
            cards: options.cards, selection: selection)
        let waitSeconds = Double(configuration.daemonWaitTimeoutSeconds)
        service.derivationGate = BudgetGate(
            budget: budget, waitSeconds: waitSeconds,
            capacityMiB: configuration.daemonKDFMemoryMiB)
        // A root daemon must not lend its pcscd rights: a user reaches only the card bound to their own record.
        service.cardScope = peer.isRoot ? .any : .boundCardOnly
        service.revokedCards = revokedCards
        logger.debug("request", [("peer.uid", String(peer.uid)), ("user", user), ("op", request.operation.rawValue)])
        var reply: Reply?
        var error: ServiceError?
        var locked = false
        do throws(ServiceError) {
            if request.operation.createsFirstWayIn {
                try checkFirstWayIn(peer: peer, user: user, relay: relay, configuration: configuration)
            }
            if request.operation.needsUserLock {
                guard userLocks.lock(user, waitingAtMost: waitSeconds) else {
                    throw .busy("another operation for \(user) is running")
                }
                locked = true
            }
            reply = try execute(
                request, service: service, user: user, peer: peer, relay: relay, configuration: configuration)
        } catch let caught {
            error = caught
        }
        // Everything is given back before the client is written to: the reply waits for no one.
        if locked { userLocks.unlock(user) }
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
    func checkFirstWayIn(
        peer: Peer, user: String, relay: RelayInteraction,
        configuration: Configuration
    ) throws(ServiceError) {
        guard !peer.isRoot, configuration.enrolAuth == .password else { return }
        let existing: EnrolmentRecord?
        do {
            existing = try store.load(user: user)
        } catch {
            throw .store(error)
        }
        if existing != nil { throw .alreadyEnrolled(user: user, path: store.recordPath(for: user)) }
        let check = LoginPasswordCheck(service: configuration.enrolPAMService)
        do {
            try check.verify(user: user, relay)
        } catch {
            if case .passwordRejected = error {
                logger.warning("login password refused before enrolment", [("user", user)])
                hub.publish(user: user, name: "passwordRejected", fields: [])
            }
            throw error
        }
        logger.info("login password checked before enrolment", [("user", user)])
    }

    /// Runs the operation and builds the final message.
    ///
    /// This is the one place a decoded request becomes a call of `PINOperations`; `ping` and `import` are the
    /// daemon's own.
    func execute(
        _ request: Request, service: some PINOperations, user: String, peer: Peer, relay: RelayInteraction,
        configuration: Configuration
    ) throws(ServiceError) -> Reply {
        switch request.operation {
        case .ping:
            return Reply(.result(exitCode: 0, fields: [JSONMember("version", .int(ProtocolLimits.version))]))
        case .enrol:
            let result = try service.enrol(relay)
            return Reply.enrolment(result)
        case .verify:
            let report = try service.verify(relay, method: request.method)
            publishOutcome(report, user: user, success: nil)
            return Reply(.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields))
        case .change:
            let report = try service.change(relay)
            publishOutcome(report, user: user, success: .changed)
            return Reply(.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields))
        case .reset where request.admin == true:
            guard peer.isRoot else {
                throw .permissionDenied("only root resets a PIN without the recovery key")
            }
            let result = try service.administratorReset(relay)
            logger.warning("PIN reset by root without the recovery key", [("user", user), ("peer.uid", "0")])
            hub.publish(user: user, name: Event.reset.name, fields: [JSONMember("method", .text("administrator"))])
            return Reply.enrolment(result)
        case .reset:
            let report = try service.reset(relay)
            publishOutcome(report, user: user, success: .reset)
            return Reply(.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields))
        case .status:
            let report = try service.status()
            return Reply(.result(exitCode: 0, fields: [JSONMember("status", report.protocolValue)]))
        case .types:
            let types = try service.types()
            return Reply(.result(exitCode: 0, fields: [JSONMember("types", TypeStatus.protocolValue(types))]))
        case .toggle:
            guard request.authenticationType == .token else {
                try service.togglePIN(on: request.on ?? true, relay)
                return Reply(
                    .result(
                        exitCode: 0, fields: [JSONMember("authType", .text("pin")), JSONMember("enabled", .bool(true))])
                )
            }
            let on = request.on ?? true
            let report =
                on
                ? try service.enableToken(
                    relay, generateKey: request.generateKey ?? false, assumeYes: request.assumeYes ?? false,
                    mode: request.mode, slot: request.slot)
                : try service.disableToken(relay, method: request.method)
            publishOutcome(report, user: user, success: .typeChanged(type: .token, enabled: on))
            let serial = (try? service.types())?.first { $0.type == .token }?.serial
            return Reply(
                .result(
                    exitCode: Int(report.exitCode.rawValue),
                    fields: report.protocolFields + [
                        JSONMember("authType", .text("token")), JSONMember("enabled", .bool(on)),
                        JSONMember("serial", serial.map(JSONValue.text) ?? .null),
                    ]))
        case .readers:
            let readers = try service.listReaders()
            return Reply(.result(exitCode: 0, fields: [JSONMember("readers", .array(readers.map(\.protocolValue)))]))
        case .cardChangePIN, .cardUnblock:
            // A card PIN that is changed, or refused, is an event and a log line like the PIN's own outcomes.
            let changing = request.operation == .cardChangePIN
            do {
                if changing {
                    try service.changeCardPIN(relay)
                } else {
                    try service.unblockCardPIN(relay, admin: request.admin ?? false)
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
        case .unenrol:
            if request.admin == true, !peer.isRoot {
                throw .permissionDenied("only root removes a record without a verification")
            }
            let report = try service.unenrol(relay, method: request.method, administrator: request.admin == true)
            publishOutcome(report, user: user, success: .unenrolled)
            return Reply(.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields))
        case .import:
            let path = try importRecord(request.record ?? [], user: user, configuration: configuration)
            return Reply(.result(exitCode: 0, fields: [JSONMember("record", .text(path))]))
        case .watch:
            throw .input("watch is not an operation")
        }
    }

    /// Publishes the outcome of a counted attempt to `watch` subscribers.
    func publishOutcome(_ report: VerifyReport, user: String, success: Event?) {
        let event: Event
        if case .verified = report.outcome, let success { event = success } else { event = report.outcome.event }
        var fields = event.protocolFields
        if case .rejected = report.outcome, let counter = report.counter {
            fields = [
                JSONMember("remaining", .int(counter.remaining)), JSONMember("lastTry", .bool(counter.remaining == 1)),
            ]
        }
        hub.publish(user: user, name: event.name, fields: fields)
        if case .verified(let method) = report.outcome, method == .token || method == .both, let card = report.card {
            cardRemoval.tokenVerified(user: user, serial: card.serial, reader: card.reader)
        }
        if case .verified(let method) = report.outcome {
            switch success {
            case .changed?: logger.info("PIN changed", [("user", user)])
            case .reset?: logger.warning("PIN reset with the recovery key; the lock is cleared", [("user", user)])
            case .typeChanged(_, let enabled)?:
                logger.info(
                    enabled ? "token switched on" : "token switched off", [("user", user), ("method", method.rawValue)])
            default: break
            }
        }
        if let counter = report.counter, counter.isLocked, report.outcome != .locked {
            hub.publish(user: user, name: "locked", fields: [])
        }
    }
}

extension TokenpinProtocol.Operation {
    /// Whether the operation reads and writes the user's record, so runs under the user's lock.
    var needsUserLock: Bool {
        switch self {
        case .enrol, .verify, .change, .reset, .toggle, .import, .cardChangePIN, .cardUnblock, .unenrol: true
        case .ping, .status, .types, .readers, .watch: false
        }
    }

    /// Whether the operation creates a first way in for a user who has none (`enrol`, `import`).
    var createsFirstWayIn: Bool { self == .enrol || self == .import }
}
