package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

func isJSONContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || mt == "application/manglecp+json")
}

func checkWellKnown(r *runner) outcome {
	w := r.w.(*httpWire)
	m := w.first
	var f failures
	if m.Status != http.StatusOK {
		f.add("GET %s answered HTTP %d", w.manifestURL, m.Status)
	}
	if ct := m.Header.Get("Content-Type"); !isJSONContentType(ct) {
		f.add("Content-Type is %q, want application/json", ct)
	}
	if !m.is(protocol.TypeManifest) {
		f.add("the body is %s, want a manifest envelope", m.describe())
	}
	return f.result("%s", w.manifestURL)
}

func checkHTTPCaching(r *runner) outcome {
	w := r.w.(*httpWire)
	m := w.first
	var f failures
	if m.Header.Get("Cache-Control") == "" {
		f.add("the manifest has no Cache-Control header")
	}
	etag := m.Header.Get("ETag")
	if etag == "" {
		f.add("the manifest has no ETag header")
		return f.result("")
	}
	ctx, cancel := r.requestCtx()
	defer cancel()
	again := w.get(ctx, http.Header{"If-None-Match": {etag}})
	switch {
	case again.Err != nil:
		f.add("GET with If-None-Match: %v", again.Err)
	case again.Status != http.StatusNotModified:
		f.add("GET with If-None-Match %s answered HTTP %d, want 304", etag, again.Status)
	}
	return f.result("Cache-Control %q, ETag %s, 304 on If-None-Match", m.Header.Get("Cache-Control"), etag)
}

func checkHTTPEndpoints(r *runner) outcome {
	w := r.w.(*httpWire)
	if w.endpointErr != "" {
		return fail("%s", w.endpointErr)
	}
	var f failures
	base, ok := r.baseReq()
	if ok {
		if rep := r.send(protocol.TypeIntentRequest, base.payload()); !rep.is(protocol.TypeIntentResponse) {
			f.add("POST %s with an intent_request: %s", w.evalURL, rep.describe())
		}
	}
	rep := r.send(protocol.TypeInvokeRequest, invokePayload("conformance-unknown-0000000000000000", nil, "", ""))
	if _, problem := wantCode(rep, protocol.CodeMacroNotFound); problem != "" {
		f.add("POST %s with an unknown macro_id: %s", w.invokeURL, problem)
	}
	return f.result("evaluate %s, invoke %s", w.evalURL, w.invokeURL)
}

func checkManifestFirst(r *runner) outcome {
	w := r.w.(*sessionWire)
	first := w.firstMessage()
	if first == nil {
		return fail("no message arrived")
	}
	if !first.is(protocol.TypeManifest) {
		return fail("the first message is %s; the manifest must come first", first.describe())
	}
	if first.Env.ID != nil {
		return fail("the manifest has id %q, want null", *first.Env.ID)
	}
	return pass("manifest first")
}

func checkPipelining(r *runner) outcome {
	w := r.w.(*sessionWire)
	base, ok := r.baseReq()
	if !ok {
		return skip("the manifest declares no intent to send")
	}
	const n = 6
	start := time.Date(2026, 2, 19, 14, 30, 0, 0, time.UTC)
	type sent struct {
		id, evalTime string
		ch           chan *reply
	}
	var all []sent
	ctx, cancel := r.requestCtx()
	defer cancel()
	t0 := time.Now()
	for i := range n {
		q := base.clone()
		q.EvalTime = start.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		id := r.newID()
		ch := w.expect(id)
		if err := w.send(ctx, encode(protocol.TypeIntentRequest, id, q.payload())); err != nil {
			w.forget(id)
			return fail("sending request %d of %d: %v", i+1, n, err)
		}
		all = append(all, sent{id: id, evalTime: q.EvalTime, ch: ch})
	}
	var f failures
	for _, s := range all {
		rep := w.await(ctx, s.id, s.ch, true, t0)
		r.record(protocol.TypeIntentRequest, s.id, idEcho, w, rep)
		if !rep.is(protocol.TypeIntentResponse) {
			f.add("request %s: %s", s.id, rep.describe())
			continue
		}
		used, ok := parseTime(payloadMap(rep)["eval_time_used"])
		want, _ := protocol.ParseRFC3339(s.evalTime)
		if !ok || !used.Equal(want) {
			f.add("the answer with id %s reports eval_time_used %v, but that request had eval_time %s: answers are mixed up", s.id, payloadMap(rep)["eval_time_used"], s.evalTime)
		}
	}
	return f.result("%d pipelined requests each answered under its id", n)
}

// slowReq builds a request that takes long to evaluate: the fixture's, or
// the base request with many more facts.
func (r *runner) slowReq() (intentReq, string, bool) {
	if r.fixture != nil && r.fixture.Slow != nil {
		s := r.fixture.Slow
		q := intentReq{Name: s.Intent.Name, Params: s.Intent.Params, Facts: append([]json.RawMessage(nil), s.Facts...)}
		templates := []json.RawMessage{s.Repeat}
		if t := bytes.TrimSpace(s.Repeat); len(t) > 0 && t[0] == '[' {
			_ = json.Unmarshal(t, &templates) // checked when the fixture was read
		}
		for i := range s.Count {
			for _, tmpl := range templates {
				q.Facts = append(q.Facts, expandTemplate(tmpl, i))
			}
		}
		return q, fmt.Sprintf("the fixture's slow request (%d facts)", len(q.Facts)), true
	}
	base, ok := r.baseReq()
	if !ok {
		return intentReq{}, "", false
	}
	preds := r.inputPredicates()
	if len(preds) == 0 {
		return intentReq{}, "", false
	}
	n := int64(5000)
	if lim := r.m.Limits.MaxFactsPerRequest; lim > 0 && lim-int64(len(base.Facts)) < n {
		n = lim - int64(len(base.Facts))
	}
	q := base.clone()
	for i := range int(n) {
		q.Facts = append(q.Facts, factWith(&preds[0], -1, nil, i))
	}
	return q, fmt.Sprintf("the base request with %d more %s facts", n, preds[0].Predicate), true
}

func checkCancel(r *runner) outcome {
	w := r.w.(*sessionWire)
	q, desc, ok := r.slowReq()
	if !ok {
		return skip("no request to cancel")
	}
	// A quick request first: its round trip bounds how late a cancel can
	// arrive.
	rtt := time.Duration(0)
	if base, ok := r.baseReq(); ok {
		if rep := r.send(protocol.TypeIntentRequest, base.payload()); rep.Err == nil {
			rtt = rep.Elapsed
		}
	}
	ctx, cancel := r.requestCtx()
	defer cancel()
	id := r.newID()
	ch := w.expect(id)
	t0 := time.Now()
	if err := w.send(ctx, encode(protocol.TypeIntentRequest, id, q.payload())); err != nil {
		w.forget(id)
		return fail("sending %s: %v", desc, err)
	}
	// Soon after the request, while it runs: the fixtures' slow requests
	// take a few tens of milliseconds on a fast server (evaluation is bounded
	// by the work budget), so a cancel sent 50 ms later found them done.
	time.Sleep(10 * time.Millisecond)
	cancelAt := time.Since(t0)
	cancelMsg := mustJSON(map[string]any{"type": protocol.TypeCancel, "id": nil, "manglecp": protocol.Version,
		"payload": map[string]any{"request_id": id}})
	if err := w.send(ctx, cancelMsg); err != nil {
		return fail("sending cancel: %v", err)
	}
	rep := w.await(ctx, id, ch, true, t0)
	r.record(protocol.TypeIntentRequest, id, idEcho, w, rep)
	var out outcome
	switch {
	case rep.Err != nil:
		return fail("after cancel, request %s got %s", id, rep.describe())
	case rep.is(protocol.TypeError):
		e := rep.errorInfo()
		if e.Code != string(protocol.CodeCancelled) {
			return skip("%s failed with %s before it could be cancelled", desc, e.Code)
		}
		if rep.Env.ID == nil || *rep.Env.ID != id {
			return fail("cancelled answers with id %s, want the cancelled request's id %q", idText(rep.Env.ID), id)
		}
		out = pass("%s cancelled after %s: cancelled with its id", desc, cancelAt.Round(time.Millisecond))
	case rep.is(protocol.TypeIntentResponse):
		ran := rep.Elapsed
		if d, ok := asInt(payloadMap(rep)["eval_duration_ms"]); ok {
			ran = time.Duration(d) * time.Millisecond
		}
		margin := 100*time.Millisecond + 2*rtt
		if ran > cancelAt+margin {
			return fail("%s went on evaluating for %s after the cancel was sent, and answered normally (evaluation took %s)",
				desc, (ran - cancelAt).Round(time.Millisecond), ran.Round(time.Millisecond))
		}
		return skip("%s finished in %s, before the cancel sent at %s could act; give the fixture a slower request",
			desc, ran.Round(time.Millisecond), cancelAt.Round(time.Millisecond))
	default:
		return fail("after cancel: %s", rep.describe())
	}
	// The session goes on after a cancel.
	if base, ok := r.baseReq(); ok {
		after := r.send(protocol.TypeIntentRequest, base.payload())
		if after.Err != nil {
			return fail("the session stopped answering after the cancel: %s", after.describe())
		}
	}
	return out
}

func checkEnvelopes(r *runner) outcome {
	var f failures
	n := 0
	judge := func(where string, raw []byte) {
		n++
		env, perr := protocol.DecodeEnvelope(raw)
		if perr != nil {
			f.add("%s: %s", where, perr.Message)
			return
		}
		if env.Type.IsRequest() || env.Type == protocol.TypeCancel {
			f.add("%s: the server sent a %s message", where, env.Type)
		}
	}
	expected := map[protocol.MessageType]protocol.MessageType{
		protocol.TypeIntentRequest: protocol.TypeIntentResponse,
		protocol.TypeInvokeRequest: protocol.TypeInvokeResponse,
		protocol.TypeAuthenticate:  protocol.TypeAuthenticateResponse,
	}
	for _, x := range r.allExchanges() {
		if x.r.Err != nil {
			continue
		}
		if x.r.Env == nil {
			f.add("%s: the answer is %s", x.check, x.r.describe())
			continue
		}
		if x.wire == "http" {
			judge(x.check, x.r.Raw)
		}
		if want, ok := expected[x.typ]; ok && x.mode == idEcho {
			if got := protocol.MessageType(x.r.Env.Type); got != want && got != protocol.TypeError {
				f.add("%s: a %s was answered with %s, want %s or error", x.check, x.typ, got, want)
			}
		}
	}
	if hw, ok := r.w.(*httpWire); ok && hw.first.Env != nil {
		judge("the manifest", hw.first.Raw)
	}
	for _, w := range append([]wire{r.w}, r.extra...) {
		sw, ok := w.(*sessionWire)
		if !ok {
			continue
		}
		for i, m := range sw.messages() {
			if m.env == nil {
				continue // judged by transport.ws.frames and transport.stdio.stdout
			}
			judge(fmt.Sprintf("%s message %d", sw.kind(), i+1), m.raw)
		}
	}
	if n == 0 {
		return skip("no message was received")
	}
	return f.result("%d messages", n)
}

func checkHTTPJSON(r *runner) outcome {
	var f failures
	n := 0
	for _, x := range r.allExchanges() {
		if x.wire != "http" || x.r.Err != nil {
			continue
		}
		n++
		if ct := x.r.Header.Get("Content-Type"); !isJSONContentType(ct) {
			f.add("%s: Content-Type %q", x.check, ct)
		}
	}
	return f.result("%d HTTP answers", n)
}

// sessionNoise lists the messages of the target's sessions that are not
// one JSON envelope in one text frame.
func (r *runner) sessionNoise() (int, failures) {
	var f failures
	n := 0
	for _, w := range append([]wire{r.w}, r.extra...) {
		sw, ok := w.(*sessionWire)
		if !ok || sw.kind() != r.w.kind() {
			continue
		}
		for i, m := range sw.messages() {
			n++
			if !m.text {
				f.add("message %d is a binary frame", i+1)
				continue
			}
			if m.env == nil {
				f.add("message %d is not a JSON message: %s", i+1, clip(m.raw, 120))
			}
		}
	}
	return n, f
}

func checkWSFrames(r *runner) outcome {
	n, f := r.sessionNoise()
	return f.result("%d frames", n)
}

func checkStdout(r *runner) outcome {
	n, f := r.sessionNoise()
	return f.result("%d lines", n)
}

// expandTemplate instantiates a fact template for copy i: "{i}" in
// strings becomes i, and the string "{i:number}" becomes the number i.
func expandTemplate(tmpl json.RawMessage, i int) json.RawMessage {
	var v any
	if decodeNumbers(tmpl, &v) != nil {
		return tmpl
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if x == "{i:number}" {
				return i
			}
			return strings.ReplaceAll(x, "{i}", strconv.Itoa(i))
		case []any:
			for k := range x {
				x[k] = walk(x[k])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return v
	}
	return mustJSON(walk(v))
}
