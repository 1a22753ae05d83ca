internal import CTokenpinShims

/// Keeps secrets out of core files: PINs, keys and Argon2 working memory would land in one.
public enum CoreDumps {
    /// Sets the core file size limit to 0 and marks the process not dumpable, so no core file is written and no
    /// process of the same user can attach to it or read its memory.
    ///
    /// Call it first thing, before any secret or Argon2 memory exists. Returns false when either call failed.
    /// The corresponding C functions are `setrlimit(RLIMIT_CORE)` and `prctl(PR_SET_DUMPABLE)`.
    public static func disable() -> Bool {
        tokenpin_disable_core_dumps() == 0
    }
}
