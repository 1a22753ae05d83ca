import FoundationEssentials

/// Where the CLI finds the machine's own files (revocation lists, PAM stacks, units, udev rules, polkit rules): `/`,
/// or in debug builds (the tests) the directory `TOKENPIN_SYSTEM_ROOT` names, so that a test builds a machine of
/// its own without touching this one.
enum SystemRoot {
    static let prefix: String = {
        #if DEBUG
            if let root = ProcessEnvironment.current["TOKENPIN_SYSTEM_ROOT"], root.hasPrefix("/") {
                return root.hasSuffix("/") ? String(root.dropLast()) : root
            }
        #endif
        return ""
    }()

    /// `absolute` under the root.
    static func path(_ absolute: String) -> String { prefix + absolute }
}
