package mcpbridge

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersionHeader is the HTTP header in which an MCP host names the
// protocol version of each request.
const protocolVersionHeader = "Mcp-Protocol-Version"

// versionedHandler serves both MCP generations on one endpoint. A request
// of MCP 2026-07-28 or later (its Mcp-Protocol-Version header) stands
// alone: it goes to a stateless handler, which serves it with a bridge
// session of its own (server/discover, tools/list, tools/call; a
// confirmation's answer comes back in a new request and finds its
// question in the bridge's ledger). Earlier versions get the stateful
// handler of o: initialize, then one bridge session per Mcp-Session-Id.
func (b *Bridge) versionedHandler(o *mcp.StreamableHTTPOptions) http.Handler {
	newServer := func(*http.Request) *mcp.Server { return b.Server() }
	stateful := mcp.NewStreamableHTTPHandler(newServer, o)
	so := *o
	so.Stateless = true
	stateless := mcp.NewStreamableHTTPHandler(newServer, &so)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(protocolVersionHeader) >= modernMCP {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// Cache hints of MCP 2026-07-28 (ttlMs, cacheScope).
const (
	// listTTLMs: the tool list and the server's description are fixed for
	// a manifest; a reloaded server's new intents reach a host within
	// this time.
	listTTLMs = 5 * 60 * 1000
)

// cacheable sets the cache hints of the results that carry them: the tool
// list and server/discover may be cached by anyone for listTTLMs (they
// are the same for every host of this bridge and never change as a side
// effect of a call); the manifest resource likewise; the resource list
// (the skills of the last evaluation) and the working state are this
// session's and stale at once.
func cacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch p := req.GetParams().(type) {
	case *mcp.ListToolsParams, *mcp.DiscoverParams:
		c.TTLMs, c.CacheScope = listTTLMs, "public"
	case *mcp.ReadResourceParams:
		if p != nil && p.URI == ManifestURI {
			c.TTLMs, c.CacheScope = listTTLMs, "public"
			return
		}
		c.TTLMs, c.CacheScope = 0, "private"
	case *mcp.ListResourcesParams:
		c.TTLMs, c.CacheScope = 0, "private"
	}
}
