import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh directory under the system temporary directory, named after `name`: private (mode 0700) unless `mode`
/// says otherwise (0755 for a test that runs a program as another user inside it).
///
/// Tests leave it behind or remove it themselves. A system that cannot create one cannot run the tests, so that
/// stops the run.
package func temporaryDirectory(_ name: String = "test", mode: mode_t = 0o700) -> String {
    var template = Array((NSTemporaryDirectory() + "/tokenpin-\(name).XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        preconditionFailure("cannot create a temporary directory: \(String(cString: strerror(errno)))")
    }
    let path = String(cString: made)
    if mode != 0o700 && chmod(path, mode) != 0 {
        preconditionFailure("cannot set the mode of \(path): \(String(cString: strerror(errno)))")
    }
    return path
}
