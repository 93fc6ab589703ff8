package workspace

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// Edit ids. preview_edit issues one per preview; apply_edit applies the
// previewed edit only with it. An id is
//
//	e1.EXPIRY.BEFORE.OFFER.APPLY
//
// EXPIRY is the Unix second after which it is refused, BEFORE the digest
// of the file the preview read (for the error that says it changed), and
// OFFER and APPLY two HMAC-SHA256 tags (128 bits each, base64url) under the
// domain's edit key:
//
//   - OFFER binds the path, the expiry, old, new and the diff shown for
//     confirmation. The external predicate signed_edit checks it, so the
//     rules offer apply_edit only for a preview this server made: a
//     previewed fact a client wrote itself gives nothing.
//   - APPLY binds, in addition, the identity the preview was made for and
//     the SHA-256 of the file before, of the file after and of the whole
//     unified diff. apply_edit checks it after reading the file and
//     replaying the edit, so it writes exactly the previewed content, for
//     the identity that previewed it, onto the file the preview read.
//
// A client can neither forge an id nor change what one stands for, and an
// id expires after Config.EditTTL (by the server's clock, whatever the
// request's eval_time says).

// EditKeyEnv names the environment variable that holds the edit key
// (Config.EditKey) for `manglecp serve` and `manglecp mcp`; the config
// file's edit_key comes first.
const EditKeyEnv = "MANGLECP_EDIT_KEY"

// DeriveEditKey returns the edit key of a deployment that configured no
// edit key but shares secret (its confirmation key) among its replicas:
// every replica derives the same key, so an edit previewed on one is
// applied on another, and the key says nothing about secret.
func DeriveEditKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("manglecp workspace edit key v1"))
	return m.Sum(nil)
}

// editIDVersion starts every edit id.
const editIDVersion = "e1"

// maxConfirmDiff bounds the diff an edit carries for the user's
// confirmation (apply_edit's diff argument, the previewed fact).
const maxConfirmDiff = 1024

// maxSignedEdits bounds the previewed facts signed_edit checks per request.
const maxSignedEdits = 16

// editID is a parsed edit id.
type editID struct {
	expiry       int64 // Unix seconds
	before       string
	offer, apply []byte
}

func parseEditID(s string) (editID, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 5 || parts[0] != editIDVersion || len(s) > 200 {
		return editID{}, false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return editID{}, false
	}
	offer, err1 := base64.RawURLEncoding.DecodeString(parts[3])
	apply, err2 := base64.RawURLEncoding.DecodeString(parts[4])
	if err1 != nil || err2 != nil || len(offer) != 16 || len(apply) != 16 {
		return editID{}, false
	}
	return editID{expiry: exp, before: parts[2], offer: offer, apply: apply}, true
}

func (id editID) String() string {
	return strings.Join([]string{editIDVersion, strconv.FormatInt(id.expiry, 10), id.before,
		base64.RawURLEncoding.EncodeToString(id.offer), base64.RawURLEncoding.EncodeToString(id.apply)}, ".")
}

// edit is what an edit id is bound to.
type edit struct {
	identity, path    string
	old, new, confirm string // confirm: the diff shown for confirmation
	before, after     []byte // the file's content before and after
	diff              string // the whole unified diff
}

// tag is the HMAC-SHA256 of fields (each length-prefixed, so no two
// field lists collide), cut to 128 bits.
func (w *Workspace) tag(fields ...string) []byte {
	m := hmac.New(sha256.New, w.editKey)
	var n [8]byte
	for _, f := range fields {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return m.Sum(nil)[:16]
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return string(h[:])
}

func (w *Workspace) offerTag(e *edit, expiry int64) []byte {
	return w.tag("workspace edit offer", e.path, strconv.FormatInt(expiry, 10), sum(e.old), sum(e.new), sum(e.confirm))
}

func (w *Workspace) applyTag(e *edit, expiry int64) []byte {
	return w.tag("workspace edit apply", e.identity, e.path, strconv.FormatInt(expiry, 10), sum(e.old), sum(e.new), sum(e.confirm),
		sum(string(e.before)), sum(string(e.after)), sum(e.diff))
}

// issue signs e, valid for EditTTL from now.
func (w *Workspace) issue(e *edit) (editID, time.Time) {
	until := w.now().Add(w.cfg.EditTTL).Truncate(time.Second)
	exp := until.Unix()
	return editID{expiry: exp, before: digestOf(e.before), offer: w.offerTag(e, exp), apply: w.applyTag(e, exp)}, until
}

// expired reports whether id is past its expiry by the server's clock.
func (w *Workspace) expired(id editID) bool {
	return w.now().Unix() >= id.expiry
}

// confirmDiff is the diff shown for confirmation: the unified diff, cut at
// a line boundary within maxConfirmDiff bytes with a note of what is left
// out.
func confirmDiff(diff string) string {
	if len(diff) <= maxConfirmDiff {
		return diff
	}
	const note = "... (%d more lines; the preview's diff holds them all)\n"
	cut := strings.LastIndexByte(diff[:maxConfirmDiff-64], '\n') + 1
	rest := strings.Count(diff[cut:], "\n")
	return diff[:cut] + strings.Replace(note, "%d", strconv.Itoa(rest), 1)
}

// signedEdits computes the external predicate signed_edit(Edit, Path,
// Diff, Until): for each previewed(Path, Edit, Old, New, Diff) fact whose
// id this server issued for that path, old, new and diff and that has not
// expired, Until being its expiry in Unix nanoseconds.
func (a *actions) signedEdits(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	var out [][]any
	checked := 0
	for _, f := range in.Facts {
		p, ok := readPreview(f)
		if !ok {
			continue
		}
		if checked++; checked > maxSignedEdits {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if h, ok := a.w.heldFor(p); ok {
			if a.w.now().Before(h.until) {
				out = append(out, []any{p.id, p.path, p.diff, h.until.UnixNano()})
			}
			continue
		}
		id, ok := parseEditID(p.id)
		if !ok || a.w.expired(id) || !hmac.Equal(id.offer, a.w.offerTag(&edit{path: p.path, old: p.old, new: p.new, confirm: p.diff}, id.expiry)) {
			continue
		}
		out = append(out, []any{p.id, p.path, p.diff, time.Unix(id.expiry, 0).UnixNano()})
	}
	return out, nil
}

// preview is a previewed fact: previewed(Path, Edit, Old, New, Diff).
type preview struct{ path, id, old, new, diff string }

func readPreview(f protocol.Fact) (preview, bool) {
	if f.Pred != "previewed" || len(f.Args) != 5 {
		return preview{}, false
	}
	var p preview
	for i, dst := range []*string{&p.path, &p.id, &p.old, &p.new, &p.diff} {
		s, ok := f.Args[i].(string)
		if !ok {
			return preview{}, false
		}
		*dst = s
	}
	return p, true
}
