import Foundation

import TokenpinCore

/// Reads and writes record files in either of the store's formats (legacy JSON, or the two-copy file), so that a
/// test that looks into or edits `<user>.json` does not depend on the format a store writes.
///
/// Reading goes through the store's own parser (`RecordStore.currentJSON`); writing makes a new file of the
/// format given (by default the one a store writes now), holding the JSON given, valid or not.
package enum RecordFiles {
    /// The record's JSON in the file at `path` (the current copy of a two-copy file); nil when the file is missing
    /// or holds no readable copy.
    package static func json(atPath path: String) -> Data? {
        guard let bytes = FileManager.default.contents(atPath: path) else { return nil }
        return try? RecordStore.currentJSON(bytes, path: path)
    }

    /// The record at `path` as a JSON object; nil when it cannot be read or is not an object.
    package static func object(atPath path: String) -> [String: Any]? {
        guard let json = json(atPath: path) else { return nil }
        return (try? JSONSerialization.jsonObject(with: json)) as? [String: Any]
    }

    /// The bytes of a new record file holding `json` in `format`.
    package static func contents(json: Data, format: RecordFormat = .fromEnvironment) -> Data {
        switch format {
        case .json: json
        case .copies: Data(RecordCopies.newFile(json: json, sequence: 1))
        }
    }

    /// Replaces the file at `path` with a new record file holding `json` in `format`, mode 0600.
    package static func write(json: Data, toPath path: String, format: RecordFormat = .fromEnvironment) throws {
        try contents(json: json, format: format).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    /// Replaces the file at `path` with a new record file holding `object` as JSON in `format`, mode 0600.
    package static func write(object: [String: Any], toPath path: String, format: RecordFormat = .fromEnvironment)
        throws
    {
        try write(json: JSONSerialization.data(withJSONObject: object), toPath: path, format: format)
    }

    /// Edits the record at `path` in place of its format: reads its JSON object, lets `edit` change it, and writes
    /// it back in the format the file had (a legacy JSON file stays JSON).
    package static func edit(atPath path: String, _ edit: (inout [String: Any]) throws -> Void) throws {
        guard let bytes = FileManager.default.contents(atPath: path), var object = object(atPath: path) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        try edit(&object)
        let format: RecordFormat = RecordCopies.isLegacyJSON(bytes) ? .json : .copies
        try write(object: object, toPath: path, format: format)
    }
}
