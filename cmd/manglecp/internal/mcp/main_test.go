package mcp

import "github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"

// commands is the command line of the tests: `manglecp mcp`.
var commands = clitest.Commands{"mcp": Run}
