// The tests' child processes are the executable's: `ChildProcess` lives in Sources/ProcessSpawn,
// shared with `herald jobs bench`; this module re-exports it under the name the tests import.
@_exported public import ProcessSpawn
