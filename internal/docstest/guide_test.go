package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGuideListsEveryContractPredicate keeps docs/write-a-domain.md in
// step with the kernel's contract: every predicate contract.mg declares
// has a line in the guide, and the guide's tickets rules are the example's.
func TestGuideListsEveryContractPredicate(t *testing.T) {
	contract, err := os.ReadFile(filepath.Join(root, "kernel/rules/schema/contract.mg"))
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs/write-a-domain.md"))
	if err != nil {
		t.Fatal(err)
	}
	decls := regexp.MustCompile(`(?m)^Decl (\w+)\(`).FindAllStringSubmatch(string(contract), -1)
	if len(decls) < 20 {
		t.Fatalf("found only %d declarations in contract.mg", len(decls))
	}
	for _, d := range decls {
		if !strings.Contains(string(guide), "`"+d[1]+"(") {
			t.Errorf("docs/write-a-domain.md does not describe contract predicate %s", d[1])
		}
	}
	example, err := os.ReadFile(filepath.Join(root, "examples/tickets/rules/domain/tickets.mg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(example), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.Contains(string(guide), line) {
			t.Errorf("the guide's copy of tickets.mg lacks %q", line)
		}
	}
}
