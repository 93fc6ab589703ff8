// Package client is the MangleCP client: it connects to a server over HTTP,
// WebSocket, stdio or any [transport.Conn], keeps the server's latest
// manifest, evaluates intents, invokes macro-tools and keeps the client's
// working state (Spec 10 section 5).
//
// It links the protocol and transport packages only, never the Mangle
// engine, so programs that only talk to servers stay small.
//
// A session is opened by URL:
//
//	s, err := client.Dial(ctx, "http://127.0.0.1:8080", &client.Options{Token: token})
//	if err != nil { ... }
//	defer s.Close()
//	resp, err := s.Evaluate(ctx, &protocol.IntentRequest{
//		Intent: protocol.Intent{Name: "diagnose_error"},
//		Facts:  []protocol.Fact{protocol.NewFact("current_url", "https://app.example.com")},
//	})
//	out, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: resp.MacroTools[0].MacroID, Args: args})
//
// Targets: "http://" and "https://" read the well-known manifest and post
// to its endpoints; "ws://" and "wss://" open a WebSocket session;
// "stdio:COMMAND ARGS..." starts a server subprocess ([DialCommand] takes an
// *exec.Cmd). [NewSession] runs a session over any [transport.Conn], for
// example one half of [transport.NewMemoryPair].
//
// Errors. A server's error answer is an [*Error]; it unwraps to the
// [*protocol.Error] payload, so errors.Is(err, &protocol.Error{Code: c})
// matches by code. A broken connection or a reply that is not MangleCP is a
// [*TransportError]; a closed session gives [ErrClosed]; a call whose
// context ends returns the context's error.
//
// Retries follow Spec 09 section 7.3: only server_not_ready and
// rate_limited, the recoverable codes a client may retry unchanged, are
// retried; each wait is at least retry_after_ms and grows exponentially
// with jitter; a call makes at most 5 attempts and stops as soon as its
// context ends.
//
// Before an intent request is sent, its facts are checked against the
// manifest's facts_profile with the server's own rules ([protocol.ValidateFacts]),
// and invalid facts are answered locally with the error the server would
// send (Spec 10 section 5.2). Options.SkipFactValidation turns this off.
//
// A [Session] is safe for concurrent use: on session transports many calls
// are pipelined over one connection, correlated by request id.
package client
