package manglecp_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

const codeTeapot protocol.Code = "x-teapot"

// codeDomain serves testdata/domaincodes: its domain registers x-teapot.
func codeDomain(codes ...protocol.CodeInfo) *manglecp.Domain {
	return &manglecp.Domain{
		ID: "codes", Description: "actions that return error codes", Rules: os.DirFS("testdata/domaincodes"),
		Actions: map[string]manglecp.ActionSpec{
			"registered": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
				e := protocol.Errorf(codeTeapot, "the pot is a teapot").WithDetails(&protocol.ErrorDetails{
					Suggestion: "brew tea", Data: map[string]any{"pot": "teapot"}})
				return nil, fmt.Errorf("wrapped: %w", e)
			}},
			"unregistered": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
				return nil, protocol.Errorf("x-nobody_registered_this", "secret detail /srv/data")
			}},
			"standard": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
				return nil, protocol.Errorf(protocol.CodeMacroNotFound, "not the action's code to give")
			}},
		},
		Codes: codes,
	}
}

var teapot = protocol.CodeInfo{Code: codeTeapot, HTTPStatus: http.StatusTeapot, Recoverable: true, Description: "The pot is a teapot"}

// TestDomainCodeRegistration: a domain's codes are checked when the
// server is built; a bad registration stops it.
func TestDomainCodeRegistration(t *testing.T) {
	for _, c := range []struct {
		name  string
		codes []protocol.CodeInfo
		want  string
	}{
		{"twice", []protocol.CodeInfo{teapot, teapot}, "registered twice"},
		{"a standard code", []protocol.CodeInfo{{Code: protocol.CodeInternalError, HTTPStatus: 500, Description: "x"}}, "standard code"},
		{"without x-", []protocol.CodeInfo{{Code: "teapot", HTTPStatus: 418, Description: "x"}}, "must match"},
		{"not an error status", []protocol.CodeInfo{{Code: "x-ok", HTTPStatus: 200, Description: "x"}}, "not an error status"},
		{"no description", []protocol.CodeInfo{{Code: "x-quiet", HTTPStatus: 400}}, "no description"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := manglecp.NewServer(*codeDomain(c.codes...), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "domain codes") {
				t.Fatalf("got %v, want an error about %q", err, c.want)
			}
		})
	}
	srv, err := manglecp.NewServer(*codeDomain(teapot), nil)
	if err != nil {
		t.Fatal(err)
	}
	if info, ok := srv.Registry().Lookup(codeTeapot); !ok || info.HTTPStatus != 418 || info.Category != "codes" || srv.Registry().DomainOf(codeTeapot) != "codes" {
		t.Errorf("registry entry %+v %v", info, ok)
	}
}

// TestDomainCodeDispatch: a registered domain code reaches the client with
// its registered status, recoverable flag and details; an unregistered one
// is logged and masked as internal_error; a standard code from an action
// is an execution failure.
func TestDomainCodeDispatch(t *testing.T) {
	h := newHarness(t, codeDomain(teapot), nil)
	invoke := func(tool, id string) *reply {
		resp := h.evaluate("e-"+id, map[string]any{"intent": map[string]any{"name": "code"},
			"facts": []any{map[string]any{"pred": "code", "args": []any{tool}}}}).intentResponse(t)
		m := macroIDOf(t, resp, tool)
		return h.invoke(id, map[string]any{"macro_id": m, "args": map[string]any{}})
	}

	r := invoke("registered", "r1")
	e := r.errorPayload(t)
	if r.status != http.StatusTeapot || e.Code != codeTeapot || !e.Recoverable || e.Details == nil ||
		e.Details.Suggestion != "brew tea" || e.Details.Data["pot"] != "teapot" {
		t.Errorf("registered code: status %d %s", r.status, r.raw)
	}

	r = invoke("unregistered", "r2")
	e = r.errorPayload(t)
	if r.status != http.StatusInternalServerError || e.Code != protocol.CodeInternalError || strings.Contains(string(r.raw), "/srv/data") ||
		strings.Contains(string(r.raw), "nobody_registered") {
		t.Errorf("unregistered code: status %d %s", r.status, r.raw)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "unregistered error code") || !strings.Contains(logs, "x-nobody_registered_this") || !strings.Contains(logs, `"request_id":"r2"`) {
		t.Errorf("the unregistered code was not logged with the request id: %s", logs)
	}

	r = invoke("standard", "r3")
	if e := r.errorPayload(t); e.Code != protocol.CodeExecutionFailed || r.status != http.StatusInternalServerError {
		t.Errorf("standard code from an action: status %d %s", r.status, r.raw)
	}
}

func macroIDOf(t *testing.T, resp *protocol.IntentResponse, name string) string {
	t.Helper()
	for _, m := range resp.MacroTools {
		if m.Name == name {
			return m.MacroID
		}
	}
	t.Fatalf("no macro-tool %s", name)
	return ""
}
