package remote

import "github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"

// commands is the command line of the tests: the client commands.
var commands = clitest.Commands{"manifest": Manifest, "eval": Eval, "invoke": Invoke, "conformance": Conformance}
