#if canImport(Glibc)
    import Glibc
#endif

/// Threads that run one closure and end, with nobody joining them.
///
/// What tokenpind used Foundation's `Thread` for (`Thread { … }`, `stackSize`, `start()`), without the rest of
/// Foundation.
package enum DetachedThread {
    /// The longest thread name Linux keeps, in UTF-8 bytes (16 with the terminating NUL).
    package static let maximumNameLength = 15

    /// Runs `body` on a new detached thread with a stack of `stackSize` bytes, named `name` when one is given.
    ///
    /// Nobody joins the thread: its stack goes when `body` returns. It starts with the caller's signal mask, like
    /// every thread. Without a name it keeps the one it inherits (the process's). The name is set on the new thread
    /// before `body` runs; a name the kernel refuses leaves the inherited one (a name is for people, not a reason to
    /// fail).
    ///
    /// When this throws, no thread started and `body` never runs: `.invalidArgument` for a stack smaller than
    /// `PTHREAD_STACK_MIN`, `ERANGE` for a name longer than ``maximumNameLength`` bytes, and what `pthread_create`
    /// reports (`EAGAIN` when the system lacks the memory or threads for it).
    ///
    /// The corresponding C functions are `pthread_create`, `pthread_attr_setstacksize` and
    /// `pthread_attr_setdetachstate`; the name is written to `/proc/thread-self/comm`, as `pthread_setname_np` does.
    package static func start(
        name: String? = nil, stackSize: Int, _ body: @escaping @Sendable () -> Void
    ) throws(Errno) {
        if let name, name.utf8.count > maximumNameLength { throw Errno(rawValue: ERANGE) }
        var attributes = pthread_attr_t()
        try check(pthread_attr_init(&attributes))
        defer { pthread_attr_destroy(&attributes) }
        try check(pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)))
        try check(pthread_attr_setstacksize(&attributes, stackSize))
        let context = Unmanaged.passRetained(Start(name: name, body: body))
        var thread = pthread_t()
        let result = pthread_create(&thread, &attributes, runStart, context.toOpaque())
        guard result == 0 else {
            context.release()
            throw Errno(rawValue: result)
        }
    }

    /// The pthread functions return their error number rather than set `errno`.
    private static func check(_ result: Int32) throws(Errno) {
        guard result == 0 else { throw Errno(rawValue: result) }
    }

    /// What the new thread needs, handed over through `pthread_create`'s argument.
    private final class Start {
        let name: String?
        let body: @Sendable () -> Void

        init(name: String?, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// The new thread's entry: names itself, runs the body, and releases what `start` retained for it.
    private static let runStart: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { raw in
        guard let raw else { return nil }
        let start = Unmanaged<Start>.fromOpaque(raw).takeRetainedValue()
        if let name = start.name { try? nameCurrentThread(name) }
        start.body()
        return nil
    }

    /// Names the calling thread (what `ps -L`, `top -H` and `/proc/PID/task/TID/comm` show).
    ///
    /// Glibc's module hides `pthread_setname_np` (a GNU extension), so this writes the name where that function
    /// writes it for another thread: `/proc/thread-self/comm`.
    private static func nameCurrentThread(_ name: String) throws(Errno) {
        let comm = try FileDescriptor.open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        try comm.writeAll(Array(name.utf8))
        try comm.close()
    }
}
