package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// exampleFacts: a page whose request r42 failed before a console error.
func exampleFacts() []protocol.Fact {
	return []protocol.Fact{
		protocol.NewFact("current_url", "https://app.example.com"),
		protocol.NewFact("console_event", "s1", "error", "TypeError: x is null", 1771510200000),
		protocol.NewFact("net_response", "s1", "r42", 404, 1771510199500),
	}
}

// A session over an in-memory pair with a server in the same process:
// evaluate an intent, then invoke the macro-tool the rules selected.
func ExampleNewSession() {
	dir, _ := os.MkdirTemp("", "reports")
	defer os.RemoveAll(dir)
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: dir}), nil)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, serverConn := transport.NewMemoryPair()
	go func() { _ = transport.ServeSession(ctx, srv, serverConn, nil) }()

	s, err := client.NewSession(ctx, conn, nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	fmt.Println("domain:", s.Manifest().Domain.ID)

	resp, err := s.Evaluate(ctx, &protocol.IntentRequest{
		Intent:  protocol.Intent{Name: "diagnose_error"},
		Facts:   exampleFacts(),
		Options: &protocol.Options{DisclosurePreference: protocol.DisclosureFull},
	})
	if err != nil {
		panic(err)
	}
	var macroID string
	for _, m := range resp.MacroTools {
		fmt.Println("tool:", m.Name)
		if m.Name == "diagnose_causal_chain" {
			macroID = m.MacroID
		}
	}
	out, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: macroID, Args: map[string]any{"request_id": "r42"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("root cause:", out.Result["root_cause"])
	// Output:
	// domain: browser_diagnostics
	// tool: diagnose_causal_chain
	// tool: inspect_console_errors
	// tool: write_diagnosis_report
	// root cause: request r42 returned HTTP 404
}

// Dial reads the manifest over HTTP. Facts that do not fit the manifest's
// facts profile are refused before sending, with the error the server
// would answer; server errors come back the same way.
func ExampleDial() {
	dir, _ := os.MkdirTemp("", "reports")
	defer os.RemoveAll(dir)
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: dir}), nil)
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()

	ctx := context.Background()
	s, err := client.Dial(ctx, hs.URL, nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()

	_, err = s.Evaluate(ctx, &protocol.IntentRequest{
		Intent: protocol.Intent{Name: "observe"},
		Facts: []protocol.Fact{
			protocol.NewFact("current_url", "https://app.example.com"),
			protocol.NewFact("console_event", "s1", "error", "TypeError"),
		},
	})
	var ce *client.Error
	if errors.As(err, &ce) {
		fmt.Println(ce.Code(), ce.Status, "local:", ce.Local)
		fmt.Println(ce.Details().Violations[0].Message)
	}

	_, err = s.Invoke(ctx, &protocol.InvokeRequest{MacroID: "no-such-macro"})
	fmt.Println(errors.Is(err, &protocol.Error{Code: protocol.CodeMacroNotFound}))
	// Output:
	// arity_mismatch 400 local: true
	// Predicate 'console_event' expects 4 arguments (session_id, level, message, timestamp), got 3
	// true
}

// A State keeps the client's facts across requests: it applies the state
// delta of an invocation and builds the request of the suggested intent.
// A tool that needs the user's confirmation is invoked with a token made
// from the confirmation key the host shares with the server.
func ExampleState() {
	dir, _ := os.MkdirTemp("", "reports")
	defer os.RemoveAll(dir)
	key := []byte("a confirmation key shared with the host")
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: dir}), &manglecp.Options{ConfirmationKey: key})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, serverConn := transport.NewMemoryPair()
	go func() { _ = transport.ServeSession(ctx, srv, serverConn, nil) }()
	s, err := client.NewSession(ctx, conn, nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()

	st := s.NewState(exampleFacts()...)
	resp, err := s.Evaluate(ctx, st.Request(protocol.Intent{Name: "diagnose_error"}))
	if err != nil {
		panic(err)
	}
	ids := map[string]string{}
	for _, m := range resp.MacroTools {
		ids[m.Name] = m.MacroID
	}

	out, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: ids["diagnose_causal_chain"], Args: map[string]any{"request_id": "r42"}})
	if err != nil {
		panic(err)
	}
	st.Apply(out)
	for _, f := range st.Facts() {
		if f.Pred == "diagnosed_error" {
			fmt.Println("state:", f.Pred, f.Args)
		}
	}
	next := st.Next(st.Suggested()[0])
	fmt.Println("next:", next.Intent.Name, len(next.Facts), "facts")

	report, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: ids["write_diagnosis_report"], Args: map[string]any{"request_id": "r42"}},
		client.WithConfirmation(key, time.Minute),
		client.WithProgress(func(p protocol.Progress) { fmt.Println("progress:", p.Status) }))
	if err != nil {
		panic(err)
	}
	fmt.Println("report for", report.Result["request_id"])
	// Output:
	// state: diagnosed_error [r42 request r42 returned HTTP 404]
	// next: observe 3 facts
	// progress: started
	// progress: running
	// progress: finalizing
	// report for r42
}
