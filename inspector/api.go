package inspector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// The JSON API the page calls. Every call needs the session token. A call
// the server answered, with a result or with an error envelope, is HTTP 200
// with an [apiReply]; only a problem of the call itself (no token, a body
// that is not JSON) is a 4xx with an [apiError].

// apiReply is the answer to an evaluate, invoke or refresh call.
type apiReply struct {
	OK bool `json:"ok"`
	// HistoryID is the request's entry in the session history (0 when the
	// call made no request).
	HistoryID int `json:"history_id,omitempty"`
	Result    any `json:"result,omitempty"`
	// Error is the server's (or the client's local) error answer.
	Error *ErrorView `json:"error,omitempty"`
}

// apiError is the answer to a call that could not be made.
type apiError struct {
	Error string `json:"error"`
}

// SessionView describes the inspected server: what the page shows at a
// glance and what drives its forms.
type SessionView struct {
	Manifest *protocol.Manifest `json:"manifest"`
	// Target is the inspected server as named on the command line; "" for
	// a server in the same process.
	Target string `json:"target"`
	// Transport is the client binding: http, websocket, stdio or conn.
	Transport string `json:"transport"`
	// ConfirmationKey reports whether the inspector can mint confirmation
	// tokens itself.
	ConfirmationKey bool `json:"confirmation_key"`
	// Predicates are the facts editor's forms, from the facts profile.
	Predicates []PredicateForm `json:"predicates"`
	// Registry is the error registry, for reference.
	Registry []RegistryEntry `json:"registry"`
	// Authentication is the server's answer to the session's authenticate
	// message, if one was sent.
	Authentication *protocol.AuthenticateResponse `json:"authentication,omitempty"`
}

// EvaluateInput is the body of an evaluate call.
type EvaluateInput struct {
	// Request is the intent request to send. Facts of output-only
	// predicates are kept out and every fact is sent as a session fact, as
	// a client's working state does ([client.State.Request]).
	Request *protocol.IntentRequest `json:"request"`
}

// EvaluateView is the result of an evaluate call.
type EvaluateView struct {
	// Request is the intent request as sent.
	Request *protocol.IntentRequest `json:"request"`
	// Response is the server's intent response as received.
	Response *protocol.IntentResponse `json:"response"`
	// Groups are the macro-tool cards by disclosure level.
	Groups []DisclosureGroup `json:"groups"`
	// Proofs are the proof trees by macro_id.
	Proofs map[string]*ProofView `json:"proofs"`
	// Coverage is the rule coverage heat map, when the response has one.
	Coverage *CoverageView `json:"coverage,omitempty"`
	// Dropped are the facts of output-only predicates kept out of the
	// request.
	Dropped []protocol.Fact `json:"dropped,omitempty"`
	// RoundTripMS is the call's duration seen by the inspector.
	RoundTripMS int64 `json:"round_trip_ms"`
}

// InvokeInput is the body of an invoke call.
type InvokeInput struct {
	Request *protocol.InvokeRequest `json:"request"`
	// Confirm is the user's confirmation: the inspector mints a
	// confirmation token with its confirmation key. Without a key the
	// request must carry confirmation_token.
	Confirm bool `json:"confirm"`
}

// InvokeView is the result of an invoke call.
type InvokeView struct {
	// Request is the invoke request as sent, its confirmation token
	// replaced by "(signed)" or "(pasted)".
	Request *protocol.InvokeRequest `json:"request"`
	// Response is the server's invoke response as received.
	Response *protocol.InvokeResponse `json:"response"`
	// Confirmed reports that the request carried a confirmation token.
	Confirmed   bool  `json:"confirmed"`
	RoundTripMS int64 `json:"round_trip_ms"`
}

// ApplyInput is the body of an apply call: the facts of the editor and a
// state delta (or continuation facts as assertions).
type ApplyInput struct {
	Facts []protocol.Fact     `json:"facts"`
	Delta protocol.StateDelta `json:"delta"`
}

// ApplyView is the editor's facts after the delta.
type ApplyView struct {
	Facts     []protocol.Fact `json:"facts"`
	Retracted int             `json:"retracted"`
	Asserted  int             `json:"asserted"`
}

// api wraps a JSON call: the token check, a bounded body, the JSON answer.
func (in *Inspector) api(h func(ctx context.Context, body []byte) (int, any)) http.HandlerFunc {
	return in.guard(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost {
			var err error
			body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, in.maxBody()))
			if err != nil {
				var mb *http.MaxBytesError
				if errors.As(err, &mb) {
					writeJSON(w, http.StatusRequestEntityTooLarge, apiError{Error: fmt.Sprintf("request body larger than %d bytes", mb.Limit)})
					return
				}
				writeJSON(w, http.StatusBadRequest, apiError{Error: "reading the request body failed"})
				return
			}
		}
		status, v := h(r.Context(), body)
		writeJSON(w, status, v)
	})
}

// maxBody is the largest API body: the server's message limit plus room
// for the inspector's own fields, at most 64 MiB.
func (in *Inspector) maxBody() int64 {
	limit := int64(16 << 20)
	if m := in.s.Manifest(); m != nil && m.Limits.MaxMessageBytes > 0 {
		limit = m.Limits.MaxMessageBytes
	}
	return min(limit+64<<10, 64<<20)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"the answer could not be encoded"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// decodeBody decodes a call's JSON body; numbers stay json.Number.
func decodeBody(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func badRequest(err error) (int, any) {
	return http.StatusBadRequest, apiError{Error: "bad request: " + err.Error()}
}

func (in *Inspector) session() SessionView {
	return SessionView{
		Manifest:        in.s.Manifest(),
		Target:          in.opts.Target,
		Transport:       in.s.Transport(),
		ConfirmationKey: len(in.opts.ConfirmationKey) > 0,
		Predicates:      predicateForms(in.s.Manifest()),
		Registry:        registry(),
		Authentication:  in.s.Authentication(),
	}
}

func (in *Inspector) handleSession(ctx context.Context, _ []byte) (int, any) {
	return http.StatusOK, in.session()
}

// handleRefresh fetches the manifest again (HTTP) or returns the latest
// one the server pushed (session transports).
func (in *Inspector) handleRefresh(ctx context.Context, _ []byte) (int, any) {
	ctx, cancel := context.WithTimeout(ctx, in.opts.CallTimeout)
	defer cancel()
	start := in.opts.Now()
	_, err := in.s.RefreshManifest(ctx)
	e := &entry{Kind: "manifest", Summary: "manifest refreshed", DurationMS: in.since(start)}
	if err != nil {
		ev := in.errorView(err)
		e.fail(ev)
		return http.StatusOK, apiReply{HistoryID: in.history.add(e, in.opts.Now()), Error: ev, Result: in.session()}
	}
	e.OK = true
	return http.StatusOK, apiReply{OK: true, HistoryID: in.history.add(e, in.opts.Now()), Result: in.session()}
}

func (in *Inspector) handleEvaluate(ctx context.Context, body []byte) (int, any) {
	var input EvaluateInput
	if err := decodeBody(body, &input); err != nil {
		return badRequest(err)
	}
	if input.Request == nil || input.Request.Intent.Name == "" {
		return badRequest(errors.New("request.intent.name is required"))
	}
	req, dropped := in.prepare(input.Request)
	ctx, cancel := context.WithTimeout(ctx, in.opts.CallTimeout)
	defer cancel()
	start := in.opts.Now()
	resp, err := in.s.Evaluate(ctx, req)
	e := &entry{Kind: "evaluate", Intent: req, DurationMS: in.since(start)}
	if err != nil {
		ev := in.errorView(err)
		e.fail(ev)
		e.Summary = fmt.Sprintf("%s: %s", req.Intent.Name, ev.Error.Code)
		return http.StatusOK, apiReply{HistoryID: in.history.add(e, in.opts.Now()), Error: ev, Result: &EvaluateView{Request: req, Dropped: dropped}}
	}
	e.OK = true
	used := resp.EvalTimeUsed
	e.EvalTimeUsed = &used
	e.Summary = fmt.Sprintf("%s: %d macro-tools", req.Intent.Name, len(resp.MacroTools))
	v := &EvaluateView{
		Request: req, Response: resp, Groups: toolGroups(resp), Proofs: proofViews(resp),
		Coverage: coverageView(resp), Dropped: dropped, RoundTripMS: e.DurationMS,
	}
	if v.Groups == nil {
		v.Groups = []DisclosureGroup{}
	}
	return http.StatusOK, apiReply{OK: true, HistoryID: in.history.add(e, in.opts.Now()), Result: v}
}

// prepare builds the request a client's working state would send: facts
// of output-only predicates stay out, every fact goes as a session fact,
// duplicates once.
func (in *Inspector) prepare(r *protocol.IntentRequest) (*protocol.IntentRequest, []protocol.Fact) {
	var profile *protocol.FactsProfile
	if m := in.s.Manifest(); m != nil {
		profile = &m.FactsProfile
	}
	var dropped []protocol.Fact
	if profile != nil {
		for _, f := range r.Facts {
			if p := profile.Predicate(f.Pred); p != nil && p.Direction == protocol.DirectionOutput {
				dropped = append(dropped, f)
			}
		}
	}
	req := client.NewState(profile).Request(r.Intent, r.Facts...)
	req.EvalTime, req.Constraints, req.Options = r.EvalTime, r.Constraints, r.Options
	return req, dropped
}

func (in *Inspector) handleInvoke(ctx context.Context, body []byte) (int, any) {
	var input InvokeInput
	if err := decodeBody(body, &input); err != nil {
		return badRequest(err)
	}
	if input.Request == nil || input.Request.MacroID == "" {
		return badRequest(errors.New("request.macro_id is required"))
	}
	req := *input.Request
	shown := req
	var opts []client.CallOption
	switch {
	case input.Confirm && len(in.opts.ConfirmationKey) > 0:
		opts = append(opts, client.WithConfirmation(in.opts.ConfirmationKey, 2*time.Minute))
		shown.ConfirmationToken = "(signed by the inspector)"
	case req.ConfirmationToken != "":
		shown.ConfirmationToken = "(pasted)"
	case input.Confirm:
		return badRequest(errors.New("the inspector has no confirmation key: paste a confirmation token, or restart manglecp inspect with --confirm-key"))
	}
	confirmed := shown.ConfirmationToken != ""
	if req.Args == nil {
		req.Args = map[string]any{}
		shown.Args = req.Args
	}
	ctx, cancel := context.WithTimeout(ctx, in.opts.CallTimeout)
	defer cancel()
	start := in.opts.Now()
	resp, err := in.s.Invoke(ctx, &req, opts...)
	hist := shown
	hist.ConfirmationToken = ""
	e := &entry{Kind: "invoke", Invoke: &hist, Confirmed: confirmed, DurationMS: in.since(start)}
	view := &InvokeView{Request: &shown, Confirmed: confirmed, RoundTripMS: e.DurationMS}
	if err != nil {
		ev := in.errorView(err)
		e.fail(ev)
		e.Summary = fmt.Sprintf("%s: %s", req.MacroID, ev.Error.Code)
		return http.StatusOK, apiReply{HistoryID: in.history.add(e, in.opts.Now()), Error: ev, Result: view}
	}
	e.OK = true
	e.Summary = fmt.Sprintf("%s: %s", req.MacroID, resp.Observability.Summary)
	view.Response = resp
	return http.StatusOK, apiReply{OK: true, HistoryID: in.history.add(e, in.opts.Now()), Result: view}
}

// handleApply applies a state delta to the editor's facts with the
// client's working-state rules ([client.State.ApplyDelta]): retractions
// first (null arguments match anything), then assertions not already held.
func (in *Inspector) handleApply(ctx context.Context, body []byte) (int, any) {
	var input ApplyInput
	if err := decodeBody(body, &input); err != nil {
		return badRequest(err)
	}
	var profile *protocol.FactsProfile
	if m := in.s.Manifest(); m != nil {
		profile = &m.FactsProfile
	}
	st := client.NewState(profile, input.Facts...)
	before := len(st.Facts())
	st.ApplyDelta(protocol.StateDelta{Retract: input.Delta.Retract})
	afterRetract := len(st.Facts())
	st.ApplyDelta(protocol.StateDelta{Assert: input.Delta.Assert})
	facts := st.Facts()
	if facts == nil {
		facts = []protocol.Fact{}
	}
	return http.StatusOK, ApplyView{Facts: facts, Retracted: before - afterRetract, Asserted: len(facts) - afterRetract}
}

func (in *Inspector) handleHistory(ctx context.Context, _ []byte) (int, any) {
	return http.StatusOK, in.history.list()
}

// handleScript exports the history as a replayable shell script:
// ?format=curl (HTTP, the default) or ?format=cli (manglecp commands).
func (in *Inspector) handleScript(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "curl"
	}
	sc := scriptContext{Target: in.opts.Target, Manifest: in.s.Manifest(), Now: in.opts.Now()}
	var text string
	switch format {
	case "curl":
		text = curlScript(sc, in.history.list())
	case "cli":
		text = cliScript(sc, in.history.list())
	default:
		writeJSON(w, http.StatusBadRequest, apiError{Error: "format must be curl or cli"})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="manglecp-session.%s.sh"`, format))
	_, _ = io.WriteString(w, text)
}

// errorView shapes a failed call: a server's (or the client's local) error
// answer with its registry entry, or a transport failure as
// x-transport_error.
func (in *Inspector) errorView(err error) *ErrorView {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Payload != nil {
		return errorView(ce.Payload, ce.Status, ce.RequestID, ce.Attempts, ce.Local)
	}
	code := protocol.Code("x-transport_error")
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("no answer within %s", in.opts.CallTimeout)
	case errors.Is(err, context.Canceled):
		msg = "the call was cancelled"
	}
	in.opts.Logger.Warn("inspector call failed", "error", err.Error())
	v := errorView(&protocol.Error{Code: code, Message: msg}, 0, "", 0, false)
	v.Status = 0
	v.Transport = true
	return v
}

func (in *Inspector) since(start time.Time) int64 {
	return in.opts.Now().Sub(start).Milliseconds()
}
