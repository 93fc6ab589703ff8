package protocol_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

// TestErrorsDoc keeps docs/errors.md equal to the registry plus the codes
// every domain of this module registers (regenerate with
// go test ./protocol -run TestErrorsDoc -update).
func TestErrorsDoc(t *testing.T) {
	var codes []protocol.DomainCode
	for _, d := range []struct {
		id    string
		codes []protocol.CodeInfo
	}{
		{browser.ID, browser.Domain(browser.Config{ReportDir: t.TempDir()}).Codes},
		{workspace.ID, workspace.Codes()},
		// The code domain registers the workspace domain's codes too; its
		// own are listed under it.
		{code.ID, code.OwnCodes()},
	} {
		for _, c := range d.codes {
			codes = append(codes, protocol.DomainCode{Domain: d.id, CodeInfo: c})
		}
	}
	if _, err := protocol.NewRegistry(codes...); err != nil {
		t.Fatalf("the domains' codes do not register together: %v", err)
	}
	protocol.CheckErrorsDoc(t, codes)
	md := protocol.RegistryMarkdown(codes...)
	for _, c := range workspace.Codes() {
		if !strings.Contains(md, "| `"+string(c.Code)+"` |") {
			t.Errorf("docs lack %s", c.Code)
		}
	}
	if !strings.Contains(md, "### Domain `workspace`") {
		t.Error("docs lack the workspace section")
	}
}
