// The CLI entry point; the command layer lands with the PIN core.
import TokenpinCore
