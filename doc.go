// Package manglecp is a MangleCP server: a domain of Mangle rules plus Go
// actions, evaluated per intent and invoked per macro-tool, behind one
// message handler that every transport shares.
//
// A domain ([Domain]) is an fs.FS of .mg rules in two trust layers
// (policy/ and domain/) and a set of named [Action] handlers. [NewServer]
// loads the rules once (start-up fails with file and line on any problem),
// checks that every action the rules name is registered, and builds the
// manifest. [Server.Handle] answers one decoded-or-not message: it is the
// protocol layer, the one place that validates requests, enforces limits
// before work, masks internal errors and logs them with the request id.
//
//	srv, err := manglecp.NewServer(browser.Domain(browser.Config{}), nil)
//	http.Handle("/", transport.NewHTTPHandler(srv, nil))
//
// The server is stateless between requests except for its macro cache:
// every evaluation runs on a fresh fact store.
//
// This package is what domain authors and embedders use (Server, Options,
// Domain, ActionSpec, Typed, External, the errors) and the request path
// that ties the jobs together: Handle decodes and admits a request
// (server.go, auth.go), evaluates it (evaluate.go), renders the answer
// (render.go) and invokes macro-tools (invoke.go). Each job lives in an
// internal package that never imports this one: admission (evaluation
// slots, failed-login budgets), oauth (JWT verification), factset (the
// request's facts, deduplicated), macroid (macro_ids), macros (definitions,
// store records, the decoded cache), render (the response's macro-tools),
// memstore (the default Store) and metrics (Prometheus collectors).
package manglecp
