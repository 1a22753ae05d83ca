import Synchronization
package import TokenpinCore

/// An `Interaction` that answers prompts from a list of lines, in order: for the demo, the benchmark and tests,
/// as `--pin-stdin` does for scripts.
///
/// Records the prompts asked and the events reported, so a caller can check the prompt order.
package final class ScriptedInteraction: Interaction, Sendable {
    private struct State {
        var answers: [[UInt8]]
        var prompts: [SecretPrompt] = []
        var events: [Event] = []
        var confirmations: [Bool]
        var questions: [String] = []
    }

    private let state: Mutex<State>
    /// How many chances a refused new PIN gets.
    package let newPINAttempts: Int

    /// Creates a script; `answers` are the lines in prompt order; `confirmations` answer yes/no questions.
    package init(_ answers: [String], confirmations: [Bool] = [], newPINAttempts: Int = 1) {
        state = Mutex(State(answers: answers.map { Array($0.utf8) }, confirmations: confirmations))
        self.newPINAttempts = newPINAttempts
    }

    package func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        let next: [UInt8]? = state.withLock { state in
            state.prompts.append(prompt)
            return state.answers.isEmpty ? nil : state.answers.removeFirst()
        }
        guard var line = next else { throw .input("the script has no answer for the \(prompt.name) prompt") }
        return SecretBytes(consuming: &line)
    }

    package func report(_ event: Event) {
        state.withLock { $0.events.append(event) }
    }

    package func choose(_ question: String, options: [String]) throws(ServiceError) -> Int {
        throw .usage(
            "\(question): several choices (\(options.joined(separator: ", "))); name one with --reader or --serial")
    }

    package func confirm(_ question: String) throws(ServiceError) -> Bool {
        state.withLock { state in
            state.questions.append(question)
            return state.confirmations.isEmpty ? false : state.confirmations.removeFirst()
        }
    }

    /// A typed confirmation: the next entry of `confirmations` says whether the word was typed; with none left,
    /// it refuses as a script without `--yes` is refused.
    package func confirmTyped(_ question: String, word: String) throws(ServiceError) -> Bool {
        let answer: Bool? = state.withLock { state in
            state.questions.append(question)
            return state.confirmations.isEmpty ? nil : state.confirmations.removeFirst()
        }
        guard let answer else { throw .usage(question + " Without a terminal to confirm on, add --yes.") }
        return answer
    }

    /// The questions asked so far, in order.
    package var questions: [String] { state.withLock { $0.questions } }

    /// The prompts asked so far, in order.
    package var prompts: [SecretPrompt] { state.withLock { $0.prompts } }
    /// The events reported so far.
    package var events: [Event] { state.withLock { $0.events } }
    /// Answers not used.
    package var unusedAnswers: Int { state.withLock { $0.answers.count } }
}
