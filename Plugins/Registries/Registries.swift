import PackagePlugin

/// Writes the lists no Swift declaration can make of itself: every operation a client may ask for
/// (TokenpinProtocol's `Operation`, one case per file in Sources/Protocol/Operations) and every command of the CLI
/// (TokenpinCLI's `Commands.all`, one per file in Sources/CLI/Commands). Each file is named after what it declares,
/// so adding an operation or a command is adding its file: no list to keep beside it.
@main
struct Registries: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        guard let module = target as? SourceModuleTarget else { return [] }
        let (kind, folder): (String, String)
        switch target.name {
        case "TokenpinProtocol": (kind, folder) = ("operations", "Operations")
        case "TokenpinCLI": (kind, folder) = ("commands", "Commands")
        default: return []
        }
        // Every Swift file under the folder, subfolders too: the tool refuses one that is not directly in it, so no
        // file there goes unlisted without a word.
        let directory = module.directoryURL.appending(path: folder).path(percentEncoded: false)
        let declarations = module.sourceFiles(withSuffix: "swift").map(\.url)
            .filter { $0.path(percentEncoded: false).hasPrefix(directory + "/") }
            .sorted { $0.path(percentEncoded: false) < $1.path(percentEncoded: false) }
        let output = context.pluginWorkDirectoryURL.appending(path: "Registry+\(folder).swift")
        return [
            .buildCommand(
                displayName: "Listing \(target.name)'s \(kind)",
                executable: try context.tool(named: "tokenpin-registries").url,
                arguments: [kind, output.path(percentEncoded: false), directory]
                    + declarations.map { $0.path(percentEncoded: false) },
                inputFiles: declarations, outputFiles: [output])
        ]
    }
}
