// Package inspector is a web page for exploring any MangleCP server: its
// manifest, a facts editor driven by the facts profile, evaluation with
// proof trees and rule coverage, invocation with the confirmation step,
// every error envelope with its registry entry, and a history of the
// session's requests that exports as a replayable curl or CLI script.
//
// The page is plain HTML, CSS and JavaScript embedded in the binary
// (go:embed), so nothing is built at run time. It talks to a small JSON API
// on the same origin, and the API talks to the server through a
// [client.Session], so every transport the client knows works: HTTP,
// WebSocket, stdio, or an in-memory connection to a server in the same
// process.
//
//	s, _ := client.Dial(ctx, "http://127.0.0.1:8080", nil)
//	in, _ := inspector.New(s, &inspector.Options{Target: "http://127.0.0.1:8080"})
//	ln, _ := inspector.Listen("127.0.0.1:0", false)
//	fmt.Println("open", in.URL(ln.Addr()))
//	_ = http.Serve(ln, in.Handler())
//
// Security. [Listen] refuses addresses that are not loopback unless told
// otherwise. Every API call must carry the inspector's random session token
// (compared in constant time) in the X-Inspector-Token header; the page
// reads it from the fragment of the URL that [Inspector.URL] prints, so the
// token never appears in a request line, a log or a Referer. The handler
// answers no CORS preflight and sets no CORS header, refuses requests whose
// Origin is not its own or that a browser marks cross-site, and checks the
// Host header (a loopback name by default) against DNS rebinding. The page
// is served with a strict Content-Security-Policy and renders server data
// as text only, since the inspected server need not be trusted.
//
// The package imports the protocol and client packages only; it never links
// the server or the Mangle engine.
package inspector
