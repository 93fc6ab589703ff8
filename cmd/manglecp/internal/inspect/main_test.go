package inspect

import "github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"

// commands is the command line of the tests: `manglecp inspect`.
var commands = clitest.Commands{"inspect": Run}
