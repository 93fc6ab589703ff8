package code

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/lsp"
	"github.com/manglecp/manglecp/protocol"
)

// Diagnostics and organised imports.

// maxDiagnosedFiles bounds the files one diagnostics request asks a
// server about.
const maxDiagnosedFiles = 100

// diagnosticsFor asks lang's server of r for the diagnostics of files:
// by pull (textDocument/diagnostic) when the server offers it, else by
// opening them and waiting for what it publishes (bounded by
// DiagnosticsWait). It reports whether every file was answered.
func (c *Code) diagnosticsFor(ctx context.Context, r *croot, lang string, files []loc) ([]map[string]any, bool, error) {
	srv, err := c.server(ctx, r, lang)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.DiagnosticsWait)
	defer cancel()
	byFile := map[string][]lsp.Diagnostic{}
	complete := true
	if srv.HasCapability("diagnosticProvider") {
		for _, f := range files {
			var rep struct {
				Kind  string           `json:"kind"`
				Items []lsp.Diagnostic `json:"items"`
			}
			err := srv.Call(ctx, "textDocument/diagnostic", map[string]any{"textDocument": map[string]any{"uri": f.uri()}}, &rep)
			if err != nil {
				if ctx.Err() != nil {
					complete = false
					break
				}
				c.log("diagnostics failed", "language", lang, "error", err)
				complete = false
				continue
			}
			byFile[f.rel] = rep.Items
		}
	} else {
		mark := srv.Mark()
		var uris []string
		for _, f := range files {
			content, err := c.readText(f, c.cfg.MaxFileBytes)
			if err != nil {
				continue
			}
			uris = append(uris, f.uri())
			_ = srv.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
				"uri": f.uri(), "languageId": lang, "version": 1, "text": string(content)}})
		}
		complete = srv.WaitDiagnostics(ctx, mark, uris)
		all := srv.Diagnostics()
		for _, f := range files {
			byFile[f.rel] = all[f.uri()]
			_ = srv.Notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": f.uri()}})
		}
	}
	var out []map[string]any
	for _, f := range files {
		for _, d := range byFile[f.rel] {
			out = append(out, map[string]any{"path": c.show(f), "line": d.Range.Start.Line + 1, "column": d.Range.Start.Character + 1,
				"severity": lsp.SeverityName(d.Severity), "message": protocol.ClipN(d.Message, 300), "source": d.Source})
		}
	}
	return out, complete, nil
}

// diagnosticLines renders diagnostics as path:line:col: severity: message.
func diagnosticLines(diags []map[string]any, max int) []string {
	sort.SliceStable(diags, func(i, j int) bool {
		if diags[i]["path"] != diags[j]["path"] {
			return diags[i]["path"].(string) < diags[j]["path"].(string)
		}
		return diags[i]["line"].(int) < diags[j]["line"].(int)
	})
	out := []string{}
	for i, d := range diags {
		if i == max {
			break
		}
		s := fmt.Sprintf("%s:%d:%d: %s: %s", d["path"], d["line"], d["column"], d["severity"], d["message"])
		if src, _ := d["source"].(string); src != "" {
			s += " (" + src + ")"
		}
		out = append(out, s)
	}
	return out
}

// diagnostics answers the diagnostics tool: the problems the language
// servers report in a file, or in the files below a directory (the whole
// root by default).
func (a *actions) diagnostics(ctx context.Context, call *manglecp.Call) (*manglecp.Outcome, error) {
	c := a.c
	pathArg, _ := call.Args["path"].(string)
	if pathArg == "" {
		pathArg = "."
	}
	var roots []loc
	if pathArg == "." && len(c.roots) > 1 {
		for _, r := range c.roots {
			roots = append(roots, loc{root: r, rel: "."})
		}
	} else {
		l, err := c.resolve(pathArg)
		if err != nil {
			return nil, err
		}
		roots = []loc{l}
	}
	out := &manglecp.Outcome{}
	var all []map[string]any
	checked, unchecked := 0, 0
	complete := true
	var firstErr error
	for _, base := range roots {
		st, err := base.root.fs.Stat(base.rel)
		if err != nil {
			return nil, c.fsError(c.show(base), err)
		}
		byLang := map[string][]loc{}
		if st.IsDir() {
			_, _ = walkFiles(base.root, base.rel, c.cfg.MaxFiles, func(rel string, _ fs.DirEntry) error {
				l := langOf(rel)
				if l == "" || len(byLang[l]) >= maxDiagnosedFiles {
					return nil
				}
				at := loc{root: base.root, rel: rel}
				if l == LangGo && !c.goLoaded(at) {
					unchecked++ // gopls does not load it: it has nothing to say
					return nil
				}
				byLang[l] = append(byLang[l], at)
				return nil
			})
		} else if l := langOf(base.rel); l == LangGo && !c.goLoaded(base) {
			unchecked++
		} else if l != "" {
			byLang[l] = []loc{base}
		}
		for _, lang := range sortedLangs(byLang) {
			files := byLang[lang]
			if err := out.Step("diagnostics "+lang, func() (string, error) {
				d, ok, err := c.diagnosticsFor(ctx, base.root, lang, files)
				if err != nil {
					return "unavailable", err
				}
				complete = complete && ok
				checked += len(files)
				all = append(all, d...)
				return fmt.Sprintf("%d files, %d diagnostics", len(files), len(d)), nil
			}); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	if checked == 0 && firstErr != nil {
		return nil, firstErr
	}
	if checked == 0 && unchecked > 0 {
		return nil, fail(CodeServerUnavailable, "build or vet it with its tags (go vet -tags ...), or read it", map[string]any{"path": bounded(pathArg), "reason": "build constraints"},
			"gopls does not check %s: build constraints exclude it", quote(pathArg))
	}
	if checked == 0 {
		return nil, fail(CodeServerUnavailable, "name a Go or Python file or directory", map[string]any{"path": bounded(pathArg), "reason": "no source files"},
			"%s holds no Go or Python file", quote(pathArg))
	}
	out.Result = map[string]any{"files_checked": checked, "diagnostics": diagnosticLines(all, c.cfg.MaxResults)}
	if !complete {
		out.Result["incomplete"] = true
	}
	if unchecked > 0 {
		out.Result["note"] = fmt.Sprintf("%d Go file(s) excluded by build constraints were not checked: gopls does not load them", unchecked)
	}
	errs := 0
	for _, d := range all {
		if d["severity"] == "error" {
			errs++
		}
	}
	out.Summary = fmt.Sprintf("%d file(s) checked: %d diagnostic(s), %d error(s).", checked, len(all), errs)
	return out, nil
}

func sortedLangs(m map[string][]loc) []string {
	out := make([]string, 0, len(m))
	for l := range m {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// diagnosticsAfter tells the servers which files an applied change wrote,
// moved or removed, then asks for the diagnostics of the changed files.
func (c *Code) diagnosticsAfter(ctx context.Context, p *plan, changed []loc) ([]string, string) {
	type key struct {
		r    *croot
		lang string
	}
	events := map[*croot][]map[string]any{}
	byKey := map[key][]loc{}
	var keys []key
	for _, f := range p.files {
		if f.from != nil {
			events[f.from.root] = append(events[f.from.root], map[string]any{"uri": f.from.uri(), "type": 3})
			events[f.to.root] = append(events[f.to.root], map[string]any{"uri": f.to.uri(), "type": 1})
		} else {
			events[f.to.root] = append(events[f.to.root], map[string]any{"uri": f.to.uri(), "type": 2})
		}
	}
	var unchecked []string
	for _, l := range changed {
		lang := langOf(l.rel)
		if lang == "" {
			continue
		}
		if lang == LangGo && !c.goLoaded(l) {
			unchecked = append(unchecked, c.show(l))
			continue
		}
		k := key{l.root, lang}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], l)
	}
	for r, evs := range events {
		for _, lang := range c.languages(r) {
			if srv := c.pool.Running(poolKey(r, lang)); srv != nil {
				_ = srv.Notify("workspace/didChangeWatchedFiles", map[string]any{"changes": evs})
			}
		}
	}
	var all []map[string]any
	var notes []string
	for _, k := range keys {
		d, complete, err := c.diagnosticsFor(ctx, k.r, k.lang, byKey[k])
		if err != nil {
			var pe *protocol.Error
			if errors.As(err, &pe) {
				notes = append(notes, pe.Message)
			}
			continue
		}
		if !complete {
			notes = append(notes, fmt.Sprintf("the %s language server did not report on every changed file in time", k.lang))
		}
		all = append(all, d...)
	}
	if len(unchecked) > 0 {
		notes = append(notes, fmt.Sprintf("gopls does not check %s (build constraints exclude it)", strings.Join(unchecked, ", ")))
	}
	return diagnosticLines(all, c.cfg.MaxResults), strings.Join(notes, "; ")
}

// organizeImports previews the language server's organisation of a
// file's imports.
func (a *actions) organizeImports(ctx context.Context, call *manglecp.Call) (*manglecp.Outcome, error) {
	c := a.c
	pathArg, _ := call.Args["path"].(string)
	l, err := c.resolve(pathArg)
	if err != nil {
		return nil, err
	}
	shown := c.show(l)
	lang := langOf(l.rel)
	if lang == "" || l.root == nil {
		return nil, fail(CodeNotMovable, "name a Go or Python file", map[string]any{"path": shown, "reason": "not source"}, "%s is not a Go or Python file", quote(shown))
	}
	content, err := c.readText(l, c.cfg.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	srv, err := c.server(ctx, l.root, lang)
	if err != nil {
		return nil, err
	}
	// The file is open while the server organises it (pyright's command
	// works on open files only).
	_ = srv.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": l.uri(), "languageId": lang, "version": 1, "text": string(content)}})
	defer srv.Notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": l.uri()}})
	out := &manglecp.Outcome{}
	var edit *lsp.WorkspaceEdit
	if err := out.Step("textDocument/codeAction", func() (string, error) {
		var actions []json.RawMessage
		err := c.call(ctx, l.root, lang, srv, "textDocument/codeAction", map[string]any{
			"textDocument": map[string]any{"uri": l.uri()},
			"range":        lsp.Range{},
			"context":      map[string]any{"diagnostics": []any{}, "only": []string{"source.organizeImports"}},
		}, &actions)
		if se := (*serverError)(nil); errors.As(err, &se) {
			return "failed", se.asFailure()
		} else if err != nil {
			return "failed", err
		}
		for _, raw := range actions {
			var ca lsp.CodeAction
			if json.Unmarshal(raw, &ca) != nil {
				continue
			}
			// Servers may answer more than the kind asked (pylsp lists
			// every refactoring): only organise imports.
			if ca.Kind != "" && ca.Kind != "source.organizeImports" && !strings.HasPrefix(ca.Kind, "source.organizeImports.") {
				continue
			}
			if ca.Edit != nil {
				edit = ca.Edit
				return ca.Title, nil
			}
			// A command (pyright): executing it makes the server ask the
			// client to apply the edit, which the client keeps.
			var cmd lsp.Command
			if len(ca.Command) > 0 && ca.Command[0] == '"' {
				_ = json.Unmarshal(raw, &cmd)
			} else if len(ca.Command) > 0 {
				_ = json.Unmarshal(ca.Command, &cmd)
			}
			if cmd.Command == "" {
				continue
			}
			srv.TakeAppliedEdits()
			if err := c.call(ctx, l.root, lang, srv, "workspace/executeCommand", map[string]any{"command": cmd.Command, "arguments": cmd.Arguments}, nil); err != nil {
				if se := (*serverError)(nil); errors.As(err, &se) {
					return "failed", se.asFailure()
				}
				return "failed", err
			}
			if applied := srv.TakeAppliedEdits(); len(applied) > 0 {
				merged := lsp.WorkspaceEdit{Changes: map[string][]lsp.TextEdit{}}
				for _, we := range applied {
					for u, es := range we.Changes {
						merged.Changes[u] = append(merged.Changes[u], es...)
					}
					merged.DocumentChanges = append(merged.DocumentChanges, we.DocumentChanges...)
				}
				edit = &merged
				return ca.Title, nil
			}
		}
		// No code action (pyright answers none for this kind): the
		// server's own organise-imports command, on the file.
		if cmd := organizeCommand(srv); cmd != "" {
			srv.TakeAppliedEdits()
			var res json.RawMessage
			if err := c.call(ctx, l.root, lang, srv, "workspace/executeCommand", map[string]any{"command": cmd, "arguments": []any{l.uri()}}, &res); err != nil {
				if se := (*serverError)(nil); errors.As(err, &se) {
					return "failed", se.asFailure()
				}
				return "failed", err
			}
			var we lsp.WorkspaceEdit
			if json.Unmarshal(res, &we) == nil && (len(we.Changes) > 0 || len(we.DocumentChanges) > 0) {
				edit = &we
			} else if applied := srv.TakeAppliedEdits(); len(applied) > 0 {
				edit = &applied[0]
			}
			srv.TakeAppliedEdits()
			if edit != nil {
				return cmd, nil
			}
		}
		return "nothing to organise", nil
	}); err != nil {
		return nil, err
	}
	if edit == nil {
		return nil, fail(CodeNothingToChange, "the imports are already organised", map[string]any{"path": shown}, "the imports of %s are already organised", quote(shown))
	}
	p, err := c.planFromWorkspaceEdit(ctx, l.root, edit, "imports", "Organised the imports of "+shown)
	if err != nil {
		return nil, err
	}
	if len(p.files) == 0 {
		return nil, fail(CodeNothingToChange, "the imports are already organised", map[string]any{"path": shown}, "the imports of %s are already organised", quote(shown))
	}
	return c.preview(ctx, p, out, nil)
}

// organizeCommand is the command that organises a file's imports with
// the file's URI as its argument: pyright's "pyright.organizeimports"
// (which its capabilities do not list), or one a server lists; "" when
// there is none.
func organizeCommand(srv *lsp.Server) string {
	if srv.Spec().Name == "pyright" {
		return "pyright.organizeimports"
	}
	var caps struct {
		Exec struct {
			Commands []string `json:"commands"`
		} `json:"executeCommandProvider"`
	}
	_ = json.Unmarshal(srv.Capabilities(), &caps)
	for _, c := range caps.Exec.Commands {
		if strings.EqualFold(c, "pyright.organizeimports") || strings.HasSuffix(strings.ToLower(c), ".organizeimports") {
			return c
		}
	}
	return ""
}
