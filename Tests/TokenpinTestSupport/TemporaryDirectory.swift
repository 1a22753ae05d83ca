import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A fresh private directory (mode 0700) under the system temporary directory, named after `name`.
///
/// Tests leave it behind or remove it themselves. A system that cannot create one cannot run the tests, so that
/// stops the run.
public func temporaryDirectory(_ name: String = "test") -> String {
    var template = Array((NSTemporaryDirectory() + "/tokenpin-\(name).XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        preconditionFailure("cannot create a temporary directory: \(String(cString: strerror(errno)))")
    }
    return String(cString: made)
}
