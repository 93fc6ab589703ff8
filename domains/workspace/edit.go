package workspace

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/rootfile"
	"github.com/manglecp/manglecp/protocol"
)

// The edit jobs: preview and apply an edit, write a whole file.

// replace replaces the one occurrence of old in content.
func (a *actions) replace(shown, content, old, new, digest string) (string, error) {
	if old == "" {
		return "", fail(CodeAnchorNotFound, "old must be non-empty text of the file; to replace the whole file use write_file",
			map[string]any{"path": shown, "digest": digest}, "the text to replace is empty")
	}
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return "", fail(CodeAnchorNotFound, "read the file again and copy old exactly, whitespace included",
			map[string]any{"path": shown, "digest": digest}, "the text to replace does not occur in %s", quote(shown))
	case n > 1:
		var lines []any
		rest, offset := content, 0
		for len(lines) < 10 {
			i := strings.Index(rest, old)
			if i < 0 {
				break
			}
			lines = append(lines, strings.Count(content[:offset+i], "\n")+1)
			offset += i + len(old)
			rest = content[offset:]
		}
		return "", fail(CodeAnchorAmbiguous, "include more surrounding lines in old so that it occurs once",
			map[string]any{"path": shown, "count": n, "lines": lines}, "the text to replace occurs %d times in %s", n, quote(shown))
	}
	return strings.Replace(content, old, new, 1), nil
}

// previewEdit shows the unified diff of an edit without writing, and
// issues the edit's signed id (see editid.go).
func (a *actions) previewEdit(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	l, err := a.at(c.Args, "path")
	if err != nil {
		return nil, err
	}
	shown := a.w.show(l)
	if all, _ := c.Args["all"].(bool); all {
		// Every occurrence: a plan the server keeps (multiedit.go).
		return a.previewPlan(ctx, []Edit{{Path: shown, Old: argString(c.Args, "old"), New: argString(c.Args, "new"), All: true}})
	}
	out := &manglecp.Outcome{}
	e := &edit{path: shown, old: argString(c.Args, "old"), new: argString(c.Args, "new")}
	e.identity, _ = manglecp.CallerIdentity(ctx)
	var digest string
	if err := out.Step("read", func() (string, error) {
		var err error
		e.before, _, err = a.w.readText(l, a.w.cfg.MaxReadBytes)
		if err != nil {
			return "read failed", err
		}
		digest = digestOf(e.before)
		return digest, nil
	}); err != nil {
		return nil, err
	}
	if err := out.Step("replace", func() (string, error) {
		after, err := a.replace(shown, string(e.before), e.old, e.new, digest)
		if err != nil {
			return "no single match", err
		}
		e.after = []byte(after)
		return "one match", nil
	}); err != nil {
		return nil, err
	}
	e.diff = unified(shown, string(e.before), string(e.after))
	e.confirm = confirmDiff(e.diff)
	id, _ := a.w.issue(e)
	// The model reads the diff once. The edit id, the digests and the
	// expiry stay in the previewed fact and the server (apply_edit's
	// validity says when it expires).
	out.Result = map[string]any{"path": shown, "diff": e.diff}
	previewed := protocol.NewFact("previewed", shown, id.String(), e.old, e.new, e.confirm)
	previewed.T = &protocol.Temporal{At: a.w.now().UTC().Format(time.RFC3339Nano)}
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("mentioned", shown), previewed}
	out.Summary = fmt.Sprintf("Previewed an edit of %s; nothing written yet.", shown)
	return out, ctx.Err()
}

// applyEdit writes the edit a preview showed. Its one argument is the
// previewed diff (so the user confirming it sees it), which names the
// previewed fact the macro-tool was synthesized from; that fact's edit id
// must be one this server issued to this identity, unexpired, for that
// path, change and diff; the file must still be the one the preview read,
// and the edit replayed on it must give the content the preview signed.
func (a *actions) applyEdit(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	diffArg := argString(c.Args, "diff")
	invalid := func(raw, why string) error {
		return fail(CodeEditInvalid, "preview the edit again with preview_edit and apply the diff it returns",
			map[string]any{"edit": bounded(raw)}, "the edit cannot be applied: %s", why)
	}
	// The previewed facts with this diff whose id the server issued for
	// them (the OFFER tag): normally one, or the same edit previewed again.
	var pv *preview
	var id editID
	var expired *editID
	checked := 0
	for _, f := range c.Facts {
		p, ok := readPreview(f)
		if !ok || p.diff != diffArg {
			continue
		}
		if checked++; checked > maxSignedEdits {
			break
		}
		if h, ok := a.w.heldFor(p); ok {
			// A plan the server keeps (multiedit.go).
			return a.applyHeld(ctx, p.id, h)
		}
		pid, ok := parseEditID(p.id)
		if !ok || !hmac.Equal(pid.offer, a.w.offerTag(&edit{path: p.path, old: p.old, new: p.new, confirm: p.diff}, pid.expiry)) {
			continue
		}
		if a.w.expired(pid) {
			expired = &pid
			continue
		}
		switch {
		case pv == nil:
			pv, id = &p, pid
		case pv.path != p.path || pv.old != p.old || pv.new != p.new:
			return nil, invalid(p.id, "two different previewed edits have this diff")
		case pid.expiry > id.expiry:
			pv, id = &p, pid
		}
	}
	if pv == nil && expired != nil {
		until := time.Unix(expired.expiry, 0).UTC().Format(time.RFC3339)
		return nil, fail(CodeEditExpired, "preview the edit again with preview_edit", map[string]any{"edit": expired.String(), "expired_at": until},
			"the previewed edit expired at %s", until)
	}
	if pv == nil {
		return nil, invalid("", "no previewed fact with an edit id this server issued has this diff")
	}
	raw := pv.id
	e := &edit{path: pv.path, old: pv.old, new: pv.new, confirm: pv.diff}
	e.identity, _ = manglecp.CallerIdentity(ctx)
	l, err := a.w.resolve(pv.path)
	if err != nil {
		return nil, err
	}
	shown := a.w.show(l)
	out := &manglecp.Outcome{}
	var st fs.FileInfo
	if err := out.Step("check_digest", func() (string, error) {
		var err error
		e.before, st, err = a.w.readText(l, a.w.cfg.MaxReadBytes)
		if err != nil {
			return "read failed", err
		}
		if got := digestOf(e.before); got != id.before {
			return "changed", fail(CodeFileChanged, "preview the edit again on the file's current content",
				map[string]any{"path": shown, "expected_digest": bounded(id.before), "actual_digest": got},
				"%s changed since the preview (digest %s, not %s)", quote(shown), got, quote(id.before))
		}
		return "unchanged", nil
	}); err != nil {
		return nil, err
	}
	if err := out.Step("check_edit", func() (string, error) {
		after, err := a.replace(shown, string(e.before), e.old, e.new, id.before)
		if err != nil {
			return "no single match", err
		}
		e.after = []byte(after)
		e.diff = unified(shown, string(e.before), after)
		if !hmac.Equal(id.apply, a.w.applyTag(e, id.expiry)) {
			return "not the previewed edit", invalid(raw, "its id was issued to another identity, or the file or the edit is not the one previewed")
		}
		return "the previewed edit", nil
	}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := out.Step("write", func() (string, error) {
		return fmt.Sprintf("%d bytes", len(e.after)), a.w.writeFile(l, e.after, st.Mode().Perm())
	}); err != nil {
		return nil, err
	}
	// The diff was shown at the preview and in the user's question: not
	// again.
	out.Result = map[string]any{"path": shown}
	out.Retract = []protocol.Fact{protocol.NewFact("previewed", pv.path, nil, nil, nil, nil)}
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("mentioned", shown)}
	out.Summary = fmt.Sprintf("Applied the previewed edit to %s.", shown)
	return out, nil
}

// writeFile creates a file, or replaces one whose digest the client sent.
func (a *actions) writeFile(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	l, err := a.at(c.Args, "path")
	if err != nil {
		return nil, err
	}
	shown := a.w.show(l)
	content := argString(c.Args, "content")
	want := argString(c.Args, "digest")
	if int64(len(content)) > a.w.cfg.MaxWriteBytes {
		return nil, fail(CodeFileTooLarge, "write less content", map[string]any{"path": shown, "size": len(content), "limit": a.w.cfg.MaxWriteBytes},
			"the content is %d bytes; the limit is %d", len(content), a.w.cfg.MaxWriteBytes)
	}
	if l.root == nil || l.rel == "." {
		return nil, fail(CodeIsADirectory, "name a file", map[string]any{"path": shown}, "%s is a directory", quote(shown))
	}
	out := &manglecp.Outcome{}
	created := false
	perm := fs.FileMode(0o644)
	if err := out.Step("check", func() (string, error) {
		st, err := l.root.fs.Stat(l.rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if _, perr := l.root.fs.Stat(path.Dir(l.rel)); perr != nil {
				parent := a.w.show(loc{root: l.root, rel: path.Dir(l.rel)})
				return "no parent", a.w.fsError(parent, perr)
			}
			created = true
			return "new file", nil
		case err != nil:
			return "stat failed", a.w.fsError(shown, err)
		case st.IsDir():
			return "directory", fail(CodeIsADirectory, "name a file", map[string]any{"path": shown}, "%s is a directory", quote(shown))
		}
		perm = st.Mode().Perm()
		cur, err := a.currentDigest(l)
		if err != nil {
			return "read failed", err
		}
		if want == "" {
			return "exists", fail(CodeFileExists, "read the file and pass its digest to replace it, or edit it with preview_edit",
				map[string]any{"path": shown, "digest": cur}, "%s exists; pass its digest to replace it", quote(shown))
		}
		if want != cur {
			return "changed", fail(CodeFileChanged, "read the file again and write against its current digest",
				map[string]any{"path": shown, "expected_digest": bounded(want), "actual_digest": cur},
				"%s changed since it was read (digest %s, not %s)", quote(shown), cur, quote(want))
		}
		return "replace", nil
	}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := out.Step("write", func() (string, error) {
		return fmt.Sprintf("%d bytes", len(content)), a.w.writeFile(l, []byte(content), perm)
	}); err != nil {
		return nil, err
	}
	digest := digestOf([]byte(content))
	out.Result = map[string]any{"path": shown, "bytes": len(content), "digest": digest, "created": created}
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("mentioned", shown)}
	verb := "Replaced"
	if created {
		verb = "Created"
	}
	out.Summary = fmt.Sprintf("%s %s (%d bytes, digest %s).", verb, shown, len(content), digest)
	return out, nil
}

// currentDigest is the digest of a file's whole content.
func (a *actions) currentDigest(l loc) (string, error) {
	f, _, err := a.w.openRegular(l)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", a.w.fsError(a.w.show(l), err)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// writeFile writes content to l: a regular file is replaced atomically
// through a temporary file and a rename (which never follows a symbolic
// link, and breaks a hard link: the file's other names keep the old
// content); a symbolic link inside the root is written through, and
// os.Root refuses one that leads outside. A file reached through a
// symbolic link is written in place, so it is refused when it has more
// than one hard link: another name of it may lie outside every root.
func (w *Workspace) writeFile(l loc, content []byte, perm fs.FileMode) error {
	shown := w.show(l)
	if lst, err := l.root.fs.Lstat(l.rel); err == nil && lst.Mode()&fs.ModeSymlink != 0 {
		f, err := l.root.fs.OpenFile(l.rel, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, perm)
		if err != nil {
			return w.fsError(shown, err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return w.fsError(shown, err)
		}
		if !st.Mode().IsRegular() {
			return fail(CodeNotText, "only regular files can be written", map[string]any{"path": shown, "media_type": "application/octet-stream"},
				"%s is not a regular file", quote(shown))
		}
		if n := linkCount(st); n > 1 {
			return fail(CodeFileLinked, "write the file under one of its other names, or ask the user to remove the extra hard links",
				map[string]any{"path": shown, "links": n},
				"%s is reached through a symbolic link and has %d hard links; writing it would change them all", quote(shown), n)
		}
		if err := f.Truncate(0); err != nil {
			return w.fsError(shown, err)
		}
		if _, err := f.Write(content); err != nil {
			return w.fsError(shown, err)
		}
		if err := f.Close(); err != nil {
			return w.fsError(shown, err)
		}
		return nil
	}
	if err := rootfile.WriteAtomic(l.root.fs, l.rel, content, perm); err != nil {
		return w.fsError(shown, err)
	}
	return nil
}
