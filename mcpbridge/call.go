package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// One tools/call, from the host's request to the answer, top to bottom.
//
// An intent tool (intentHandler, singleHandler) answers with the
// selection of one evaluation (answerIntent): the evaluation (evaluate,
// evaluate.go), its answer (renderEvaluation, render.go), and the tool the
// rules fully decided, run at once (the autoRun step, steps.go).
//
// A macro-tool call (metaHandler, or macroHandler in ModeDynamic) goes
// through the stages of invoke, each of which may end the call with its
// answer:
//
//  1. resume: the call carries the user's answer to a question a tool
//     that followed it asked (steps.go): that tool runs or not, and the
//     answer is given;
//  2. resolve: the tool of the selection, or reached in this call (the
//     reach step, steps.go);
//  3. check: its full definition (disclose.go), the arguments the rules
//     fixed filled in, the arguments checked against its schema;
//  4. consent: the user asked, or the user's answer checked (consent.go);
//  5. run: the server runs it, the state delta joins the working state,
//     the result is rendered (render.go), and what comes next is added
//     (the next step, steps.go).
//
// Who made the call (a [caller]) decides what the bridge may do on its
// own after it: only the model's own call has a tool follow it.

// intentHandler evaluates one intent with the working state and the
// model's facts.
func (ss *mcpSession) intentHandler(intent string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, facts, perr := parseIntentArgs(req.Params.Arguments)
		if perr != nil {
			return errorResult(perr), nil
		}
		res, err := ss.answerIntent(ctx, req, &evaluation{intent: intent, params: args.Params, facts: facts, explain: args.Explain})
		if err != nil {
			return ss.fail(ctx, "evaluate", err), nil
		}
		return res, nil
	}
}

// singleHandler is the one intent tool: it evaluates the intent its
// intent argument names, one of intents.
func (ss *mcpSession) singleHandler(intents []string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, facts, perr := parseIntentArgs(req.Params.Arguments)
		if perr != nil {
			return errorResult(perr), nil
		}
		if !slices.Contains(intents, args.Intent) {
			return errorResult(unknownIntent(args.Intent, intents)), nil
		}
		res, err := ss.answerIntent(ctx, req, &evaluation{intent: args.Intent, params: args.Params, facts: facts, explain: args.Explain})
		if err != nil {
			return ss.fail(ctx, "evaluate", err), nil
		}
		return res, nil
	}
}

// unknownIntent is the error of the single intent tool called without an
// intent, or with one the manifest does not list: the details suggest the
// closest intent and list them all.
func unknownIntent(name string, intents []string) *protocol.Error {
	all := "the intents are: " + strings.Join(intents, ", ")
	if name == "" {
		return protocol.Errorf(CodeInvalidArguments, "%s needs an intent", IntentToolName).
			WithDetails(&protocol.ErrorDetails{Field: "intent", Suggestion: all})
	}
	sug := all
	if c := protocol.Closest(name, intents); c != "" {
		sug = fmt.Sprintf("did you mean %q? %s", c, all)
	}
	return protocol.Errorf(CodeInvalidArguments, "unknown intent %q", bounded(name, 64)).
		WithDetails(&protocol.ErrorDetails{Field: "intent", Suggestion: sug})
}

// answerIntent is the answer of an intent tool: ev is evaluated, its
// selection rendered, and a tool the rules fully decided runs at once
// (autoRun).
func (ss *mcpSession) answerIntent(ctx context.Context, req *mcp.CallToolRequest, ev *evaluation) (*mcp.CallToolResult, error) {
	resp, entries, err := ss.evaluate(ctx, req, ev)
	if err != nil {
		return nil, err
	}
	return ss.autoRun(ctx, req, ss.renderEvaluation(ctx, ev, resp, entries), entries), nil
}

// macroHandler invokes the macro-tool registered as name (ModeDynamic).
func (ss *mcpSession) macroHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, perr := parseObject(req.Params.Arguments)
		if perr != nil {
			return errorResult(perr), nil
		}
		return ss.invoke(ctx, req, name, args, byModel), nil
	}
}

// metaHandler is invoke_macro_tool: {"tool": NAME, "arguments": {...}}.
func (ss *mcpSession) metaHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &a); err != nil || a.Tool == "" {
		return errorResult(protocol.Errorf(CodeInvalidArguments, "invoke_macro_tool needs {\"tool\": NAME, \"arguments\": {...}}")), nil
	}
	args, perr := parseObject(a.Arguments)
	if perr != nil {
		return errorResult(perr), nil
	}
	return ss.invoke(ctx, req, a.Tool, args, byModel), nil
}

// parseObject decodes tool arguments as a JSON object (numbers exact).
func parseObject(raw json.RawMessage) (map[string]any, *protocol.Error) {
	out := map[string]any{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, protocol.Errorf(CodeInvalidArguments, "the arguments are not a JSON object")
	}
	return out, nil
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// caller says who made a macro-tool call, which decides what the bridge
// may do on its own after it.
type caller int

const (
	// byModel is the model's own call: a tool the rules decided for an
	// intent its answer suggests may follow it at once (steps.go).
	byModel caller = iota
	// byBridge is a call the bridge made on its own (autoRun, a tool that
	// followed another): nothing more follows it.
	byBridge
	// byAnswer is the host's call again with the user's answer to a
	// question: nothing follows under that answer (it would run under the
	// user's answer, or ask again).
	byAnswer
)

// callerOf is who made a call of the host: by, or byAnswer when the call
// carries the user's answer to a question.
func callerOf(p *mcp.CallToolParamsRaw, by caller) caller {
	if carriesAnswer(p) {
		return byAnswer
	}
	return by
}

// macroCall is one macro-tool call as it goes through the stages of
// invoke.
type macroCall struct {
	req  *mcp.CallToolRequest
	name string         // the tool's MCP name
	args map[string]any // its arguments (the fixed ones filled in by check)
	by   caller
	// origin identifies the model's call (tool and arguments), which the
	// question of a tool that follows it is bound to (steps.go).
	origin string

	entry *macroEntry         // resolve: the selected tool
	def   *protocol.MacroTool // check: its definition, full when disclosed
	token string              // consent: the confirmation token, once the user accepted
}

// invoke runs the macro-tool called name with args through the stages
// (see the top of this file); by says who calls it.
func (ss *mcpSession) invoke(ctx context.Context, req *mcp.CallToolRequest, name string, args map[string]any, by caller) *mcp.CallToolResult {
	if res, ok := ss.resume(ctx, req, name, args); ok {
		// The user answered the question of a tool that follows this
		// call: this call ran when it was asked.
		return res
	}
	c := &macroCall{req: req, name: name, args: args, by: callerOf(req.Params, by), origin: callDigest(name, args)}
	if res := ss.resolve(ctx, c); res != nil {
		return res
	}
	if res := ss.check(ctx, c); res != nil {
		return res
	}
	if res := ss.consent(ctx, c); res != nil {
		return res
	}
	return ss.run(ctx, c)
}

// callDigest identifies a call by its tool and arguments.
func callDigest(name string, args map[string]any) string {
	return digest(name + "\x00" + canonicalArgs(args))
}

// resolve finds the selected tool c calls. A tool the selection lacks (or
// whose selected form does not take these arguments: a path the rules did
// not bind) is reached in this call (reach). Over stateless HTTP (MCP
// 2026-07-28) every request, the answer to a confirmation too, comes to a
// new session: the pending question binds the macro_id the evaluation
// yields again.
func (ss *mcpSession) resolve(ctx context.Context, c *macroCall) *mcp.CallToolResult {
	e, current := ss.entry(c.name)
	if e == nil || !fits(e, c.args) {
		if r, names := ss.reach(ctx, c.req, c.name, c.args); r != nil || e == nil {
			e, current = r, names
		}
	}
	if e == nil {
		perr := protocol.Errorf(CodeUnknownTool, "no evaluation of this session selected a tool named %q", bounded(c.name, 64))
		sug := "call an intent tool first"
		if len(current) > 0 {
			sug = "the selected tools are: " + strings.Join(current, ", ")
		}
		return errorResult(perr.WithDetails(&protocol.ErrorDetails{Suggestion: sug}))
	}
	c.entry = e
	return nil
}

// check completes c's arguments and checks them before the user is asked
// or the server is called: the model corrects its call from the errors and
// the signature.
func (ss *mcpSession) check(ctx context.Context, c *macroCall) *mcp.CallToolResult {
	e := c.entry
	c.def = &e.tool
	if c.def.InputSchema == nil {
		// Condensed or minimal disclosure: the full definition says which
		// arguments the rules fixed and which the tool takes.
		if full := ss.disclose(ctx, e); full != nil {
			c.def = full
		}
	}
	fillFixed(c.def.InputSchema, c.args)
	errs, refused := e.args.check(c.def.InputSchema, c.args)
	if refused != nil {
		return errorResult(refused)
	}
	if len(errs) > 0 {
		return errorResult(protocol.Errorf(CodeInvalidArguments, "the arguments of %s do not match its parameters", e.name).
			WithDetails(&protocol.ErrorDetails{SchemaErrors: errs, Suggestion: "call " + toolSignature(e.name, c.def.InputSchema)}))
	}
	return nil
}

// run invokes c's tool on the server (with the user's confirmation token,
// if asked), applies the state delta and renders the result, with what
// comes next (withNext).
func (ss *mcpSession) run(ctx context.Context, c *macroCall) *mcp.CallToolResult {
	e := c.entry
	s, err := ss.b.session(ctx)
	if err != nil {
		return ss.fail(ctx, "invoke", err)
	}
	opt, wait := ss.progress(ctx, c.req)
	resp, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: e.tool.MacroID, Args: c.args}, opt, client.WithConfirmationToken(c.token))
	wait()
	if err != nil {
		if transportFailure(err) {
			ss.b.broken(s)
		}
		if perr := ErrorOf(err); perr.Code == protocol.CodeConfirmationRequired && c.token == "" {
			// The tool's safety block was not disclosed: ask now.
			return ss.askConsent(ctx, c)
		}
		return ss.fail(ctx, "invoke", err)
	}
	if perr := ss.b.opts.Limits.checkInvocation(resp); perr != nil {
		return errorResult(perr)
	}
	ss.workingState(s).Apply(resp)
	return ss.withNext(ctx, c, ss.renderInvoke(e, resp), resp)
}

// fail logs err and returns its error result.
func (ss *mcpSession) fail(ctx context.Context, op string, err error) *mcp.CallToolResult {
	e := ErrorOf(err)
	if _, ok := err.(*protocol.Error); !ok {
		ss.b.opts.Logger.WarnContext(ctx, "bridge call failed", "op", op, "code", string(e.Code), "error", err.Error())
	}
	return errorResult(e)
}

// progress forwards the MangleCP progress of one call to the host as MCP
// progress notifications, when the host asked for them (a progress
// token). The returned func waits until every note was sent; call it
// after the call returned, before answering.
func (ss *mcpSession) progress(ctx context.Context, req *mcp.CallToolRequest) (client.CallOption, func()) {
	if req == nil || req.Session == nil {
		return nil, func() {}
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return nil, func() {}
	}
	ch := make(chan protocol.Progress, 32)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0.0
		for p := range ch {
			params := &mcp.ProgressNotificationParams{ProgressToken: tok, Message: strings.TrimSpace(p.Status + " " + bounded(p.Detail, 300))}
			if p.Percent != nil && *p.Percent > n && *p.Percent <= 100 {
				n = *p.Percent
			} else {
				n += 0.001 // progress must increase
			}
			params.Progress, params.Total = n, 100
			if err := req.Session.NotifyProgress(ctx, params); err != nil {
				ss.b.opts.Logger.Debug("progress notification", "error", err.Error())
			}
		}
	}()
	opt := client.WithProgress(func(p protocol.Progress) {
		select {
		case ch <- p:
		default: // the host is slow: drop a note rather than block the session
		}
	})
	return opt, func() { close(ch); <-done }
}
