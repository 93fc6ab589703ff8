package serve_test

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/serve"
)

// incidents is the scaffold's domain (manglecp new domain): show_logs, and
// rollback behind the user's confirmation.
func incidents() manglecp.Domain {
	type in struct {
		Service string `json:"service"`
	}
	run := func(key string) manglecp.ActionSpec {
		return manglecp.Typed(func(_ context.Context, _ *manglecp.Call, a in) (*manglecp.Outcome, map[string]string, error) {
			return nil, map[string]string{key: a.Service}, nil
		})
	}
	rules := fstest.MapFS{
		"policy/p.mg": {Data: []byte(`requires_confirmation("rollback").` + "\n")},
		"domain/d.mg": {Data: []byte(`decl_intent("triage", "Triage an open incident.").
decl_intent_fact("triage", "incident", "required").
decl_predicate("incident", "input", "An open incident.").
decl_arg("incident", 0, "id", "string").
decl_arg("incident", 1, "service", "string").
tool("show_logs").
tool_action("show_logs", "show_logs").
tool_param("show_logs", "service", "string", "The service.").
tool_param_required("show_logs", "service").
tool("rollback").
tool_action("rollback", "rollback").
tool_param("rollback", "service", "string", "The service.").
tool_param_required("rollback", "service").
mandatory_for_intent("triage", "show_logs") :- incident(_, _).
relevant_to_intent("triage", "rollback", 60) :- incident(_, _).
tool_param_enum(Tool, "service", S) :- tool(Tool), incident(_, S).
`)},
	}
	return manglecp.Domain{ID: "incidents", Rules: rules, Actions: map[string]manglecp.ActionSpec{"show_logs": run("log"), "rollback": run("rolled_back")}}
}

// TestMCPServesAnyDomain: serve.MCP serves a domain of one's own to an MCP
// host over stdio (the Go SDK's client here; scripts/checks/scaffold-mcp.sh
// drives the scaffold's binary with the MCP Inspector CLI and the
// TypeScript SDK): the intent tool and invoke_macro_tool are listed, the
// intent selects the tools, show_logs runs, and rollback runs only when
// the user accepts the host's question. Closing stdin ends it with nil.
func TestMCPServesAnyDomain(t *testing.T) {
	for _, accept := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- serve.MCP(ctx, incidents(), &serve.Options{Server: &manglecp.Options{Logger: slog.New(slog.DiscardHandler)}}, inR, outW)
			outW.Close()
		}()
		asked := 0
		cl := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked++
				if !accept {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
			}})
		cs, err := cl.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
		if err != nil {
			t.Fatal(err)
		}
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		if strings.Join(names, ",") != "invoke_macro_tool,triage" {
			t.Errorf("tools/list: %v, want triage and invoke_macro_tool", names)
		}
		call := func(name string, args map[string]any) string {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var b strings.Builder
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					b.WriteString(tc.Text)
				}
			}
			if res.IsError {
				return "error: " + b.String()
			}
			return b.String()
		}
		// The tool that asks the user says so in the listing (issue 39
		// item 6), show_logs does not.
		got := call("triage", map[string]any{"facts": []any{[]any{"incident", "INC-1", "checkout"}}})
		if !strings.Contains(got, "show_logs(") || !regexp.MustCompile(`rollback\([^\n]*\(asks the user\)`).MatchString(got) || regexp.MustCompile(`show_logs\([^\n]*\(asks the user\)`).MatchString(got) {
			t.Errorf("triage answered %q, want show_logs, and rollback marked (asks the user)", got)
		}
		if got := call("invoke_macro_tool", map[string]any{"tool": "show_logs", "arguments": map[string]any{"service": "checkout"}}); !strings.Contains(got, "checkout") || strings.HasPrefix(got, "error") {
			t.Errorf("show_logs answered %q", got)
		}
		got = call("invoke_macro_tool", map[string]any{"tool": "rollback", "arguments": map[string]any{"service": "checkout"}})
		switch {
		case asked != 1:
			t.Errorf("the user was asked %d times, want once", asked)
		case accept && (strings.HasPrefix(got, "error") || !strings.Contains(got, "checkout")):
			t.Errorf("accepted rollback answered %q", got)
		case !accept && !strings.HasPrefix(got, "error"):
			t.Errorf("declined rollback ran: %q", got)
		}
		_ = cs.Close()
		inW.Close()
		if err := <-done; err != nil {
			t.Errorf("MCP returned %v after the host closed stdin", err)
		}
		cancel()
	}
}
