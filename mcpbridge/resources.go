package mcpbridge

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"mime"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Binary results. A macro-tool's result may carry bytes, for example the
// browser domain's screenshot, as an object
//
//	{"media_type": "image/png", "encoding": "base64", "bytes": 34567, "data": "<base64>"}
//
// at its top level or nested in it. Base64 in the answer would be read by
// the model at every later turn (tens of thousands of tokens for one
// screenshot) and means nothing to it, so the bridge keeps the bytes in
// the MCP session as a resource, ResultURIPrefix + "<n>.<ext>", and the
// answer shows the object with "uri" in place of "data", followed by a
// resource_link item for hosts that speak MCP 2025-06-18 or later. A
// session holds at most MaxResults resources of at most MaxResultBytes
// together; the oldest go first.

// ResultURIPrefix is the URI prefix of the binary results the bridge
// holds: manglecp://results/1.png, manglecp://results/2.pdf, ...
const ResultURIPrefix = "manglecp://results/"

// The bounds of one MCP session's binary results. A result over
// MaxResultBytes is not kept (the answer says so); keeping another
// result evicts the oldest until both bounds hold, and reading an evicted
// one answers the SDK's resource-not-found error.
const (
	MaxResults     = 8
	MaxResultBytes = 16 << 20
)

// The search for binary objects in a result stops at this depth of
// nesting (the result object is depth 1; an array counts as a level) and
// after this many objects.
const (
	maxBlobDepth   = 4
	maxBlobObjects = 64
)

// resultStore holds one MCP session's binary results as resources of its
// server. It is safe for concurrent use; a nil *resultStore keeps
// nothing. It starts no goroutine: evicted results are removed from the
// server and their bytes are garbage once a read in flight has
// answered; the whole store goes with the session's server.
type resultStore struct {
	srv *mcp.Server

	mu   sync.Mutex // held across the server's resource changes, so they follow the store's order
	n    int        // results numbered so far
	held []*heldResult
	size int // bytes held
}

// heldResult is one binary result.
type heldResult struct {
	uri, name, mime string
	data            []byte
}

// newResultStore returns an empty store of srv's resources.
func newResultStore(srv *mcp.Server) *resultStore { return &resultStore{srv: srv} }

// keep stores data as a new resource of type mediaType and returns its
// URI, evicting the oldest results until the bounds hold; "" when data is
// over MaxResultBytes (or s is nil).
func (s *resultStore) keep(data []byte, mediaType string) string {
	if s == nil || len(data) > MaxResultBytes {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for len(s.held) > 0 && (len(s.held) >= MaxResults || s.size+len(data) > MaxResultBytes) {
		old := s.held[0]
		s.held[0] = nil
		s.held = s.held[1:]
		s.size -= len(old.data)
		gone = append(gone, old.uri)
	}
	s.n++
	name := fmt.Sprintf("%d.%s", s.n, extension(mediaType))
	h := &heldResult{uri: ResultURIPrefix + name, name: name, mime: mediaType, data: data}
	s.held = append(s.held, h)
	s.size += len(data)
	if len(gone) > 0 {
		s.srv.RemoveResources(gone...)
	}
	s.srv.AddResource(&mcp.Resource{URI: h.uri, Name: name, MIMEType: mediaType, Size: int64(len(data)),
		Description: "A binary result of a macro-tool, held by the bridge until newer ones evict it."}, s.read)
	return h.uri
}

// find returns the result held under uri, or nil.
func (s *resultStore) find(uri string) *heldResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.held {
		if h.uri == uri {
			return h
		}
	}
	return nil
}

// read answers resources/read of a held result: its bytes as a blob
// (base64 on the wire, as MCP requires).
func (s *resultStore) read(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	h := s.find(uri)
	if h == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: h.mime, Blob: h.data}}}, nil
}

// resultURIs matches the URIs of binary results in an answer's text.
var resultURIs = regexp.MustCompile(regexp.QuoteMeta(ResultURIPrefix) + `[0-9]+\.[a-z]+`)

// links returns a resource_link item for each result text names that s
// still holds, in the order text names them, each once.
func (s *resultStore) links(text string) []mcp.Content {
	if s == nil || !strings.Contains(text, ResultURIPrefix) {
		return nil
	}
	var out []mcp.Content
	var seen []string
	for _, uri := range resultURIs.FindAllString(text, -1) {
		if slices.Contains(seen, uri) {
			continue
		}
		seen = append(seen, uri)
		if h := s.find(uri); h != nil {
			out = append(out, &mcp.ResourceLink{URI: h.uri, Name: h.name, MIMEType: h.mime})
		}
	}
	return out
}

// shelve returns result with each binary object it holds (isBlob, within
// maxBlobDepth and maxBlobObjects) kept in s and shown by its URI: the
// object keeps its other fields and "data" becomes "uri". Data that is
// not valid base64, or over MaxResultBytes, is dropped and a "note" says
// so. result itself is not changed: what changes is copied.
func (s *resultStore) shelve(result map[string]any) map[string]any {
	w := &blobWalker{s: s}
	if v, changed := w.walk(result, 1); changed {
		return v.(map[string]any)
	}
	return result
}

// blobWalker finds binary objects in one result.
type blobWalker struct {
	s       *resultStore
	objects int // objects visited
}

// walk returns v with its binary objects shelved, and whether anything
// changed. Objects are visited in key order, so that the numbering and
// the bound on objects do not depend on map order.
func (w *blobWalker) walk(v any, depth int) (any, bool) {
	if depth > maxBlobDepth {
		return v, false
	}
	switch x := v.(type) {
	case map[string]any:
		if w.objects >= maxBlobObjects {
			return v, false
		}
		w.objects++
		if isBlob(x) {
			return w.s.blob(x), true
		}
		var out map[string]any
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if nv, changed := w.walk(x[k], depth+1); changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = nv
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			if nv, changed := w.walk(e, depth+1); changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = nv
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// isBlob reports whether o is a binary object: "encoding": "base64", a
// string "data", and a string "media_type" or "mime_type".
func isBlob(o map[string]any) bool {
	if enc, _ := o["encoding"].(string); enc != "base64" {
		return false
	}
	if _, ok := o["data"].(string); !ok {
		return false
	}
	return blobType(o) != ""
}

// blobType is a binary object's media type as given ("" when absent).
func blobType(o map[string]any) string {
	if t, _ := o["media_type"].(string); t != "" {
		return t
	}
	t, _ := o["mime_type"].(string)
	return t
}

// blob keeps a binary object's data in s and returns the object as the
// answer shows it: without "data", with "uri" or a "note".
func (s *resultStore) blob(o map[string]any) map[string]any {
	data := o["data"].(string)
	out := maps.Clone(o)
	delete(out, "data")
	note := func(msg string) map[string]any {
		key := "note"
		if _, taken := out[key]; taken {
			key = "data_note"
		}
		out[key] = msg
		return out
	}
	if n := decodedLen(data); n > MaxResultBytes {
		return note(fmt.Sprintf("data not kept: %d bytes, over the bridge's bound of %d bytes", n, MaxResultBytes))
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(data)
	}
	switch {
	case err != nil:
		return note("data not shown: not valid base64")
	case len(raw) == 0:
		return note("data not shown: empty")
	}
	uri := s.keep(raw, mediaType(blobType(o)))
	if uri == "" {
		return note("data not kept")
	}
	out["uri"] = uri
	return out
}

// decodedLen is the length of base64 data once decoded (line breaks and
// padding do not count), without decoding it.
func decodedLen(data string) int {
	n := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\n', '\r', '=':
		default:
			n++
		}
	}
	return n * 6 / 8
}

// mediaType is a binary object's media type as the resource's MIME type:
// lower case, without parameters; application/octet-stream when it is
// not a media type.
func mediaType(t string) string {
	mt, _, err := mime.ParseMediaType(t)
	if err != nil || !strings.Contains(mt, "/") || len(mt) > 127 {
		return "application/octet-stream"
	}
	return mt
}

// extension is the file extension of a result's URI.
func extension(mediaType string) string {
	switch mediaType {
	case "image/png":
		return "png"
	case "image/jpeg", "image/jpg":
		return "jpeg"
	case "application/pdf":
		return "pdf"
	}
	return "bin"
}

// resourceLinksSince is the first MCP version with resource_link content.
const resourceLinksSince = "2025-06-18"

// linkResults is receiving middleware: it appends to the answer of every
// tools/call a resource_link item for each binary result the answer's
// text names and the session still holds (the text says "uri" where the
// data was), when the host speaks MCP 2025-06-18 or later. It sees every
// answer whole, whatever path rendered the result (autoRun, follow, the
// answer to a confirmation).
func (ss *mcpSession) linkResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/call" || err != nil {
			return res, err
		}
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && protocolVersion(req) >= resourceLinksSince {
			r.Content = append(r.Content, ss.results.links(textOf(r))...)
		}
		return res, err
	}
}

// protocolVersion is the MCP version of a request: the one its _meta
// names (MCP 2026-07-28), else the one its session negotiated; "" when
// neither is known.
func protocolVersion(req mcp.Request) string {
	if v, _ := metaOf(req)[mcp.MetaKeyProtocolVersion].(string); v != "" {
		return v
	}
	if req == nil {
		return ""
	}
	if sess, ok := req.GetSession().(*mcp.ServerSession); ok && sess != nil {
		if p := sess.InitializeParams(); p != nil {
			return p.ProtocolVersion
		}
	}
	return ""
}
