package workspace

import (
	"github.com/bmatcuk/doublestar/v4"

	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// sniffBytes is how much of a file decides whether it is text.
const sniffBytes = 8 << 10

// mediaTypes maps the extensions read_media serves to their media types.
var mediaTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".bmp": "image/bmp", ".ico": "image/x-icon", ".tif": "image/tiff", ".tiff": "image/tiff",
	".mp3": "audio/mpeg", ".wav": "audio/wav", ".ogg": "audio/ogg", ".flac": "audio/flac", ".m4a": "audio/mp4",
	".aac": "audio/aac", ".opus": "audio/opus", ".weba": "audio/webm",
}

func mediaType(name string) (string, bool) {
	t, ok := mediaTypes[strings.ToLower(path.Ext(name))]
	return t, ok
}

// digestOf is the digest clients see and send back: the first 16 hex
// digits of the SHA-256 of the content.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// isText reports whether b (a file's first bytes) looks like UTF-8 text:
// no NUL byte, valid UTF-8 except for a rune cut at the end.
func isText(b []byte, cut bool) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	if cut {
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1]
		}
	}
	return utf8.Valid(b)
}

// openRegular opens a regular file for reading without blocking on a
// FIFO or device: anything but a regular file is refused.
func (w *Workspace) openRegular(l loc) (*os.File, fs.FileInfo, error) {
	shown := w.show(l)
	if l.root == nil {
		return nil, nil, fail(CodeIsADirectory, "name a file", map[string]any{"path": shown}, "%s is a directory", quote(shown))
	}
	f, err := l.root.fs.OpenFile(l.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, w.fsError(shown, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, w.fsError(shown, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, nil, fail(CodeIsADirectory, "list it with list_dir", map[string]any{"path": shown}, "%s is a directory", quote(shown))
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fail(CodeNotText, "only regular files can be read", map[string]any{"path": shown, "media_type": "application/octet-stream"},
			"%s is not a regular file", quote(shown))
	}
	return f, st, nil
}

// readText reads a whole text file of at most limit bytes.
func (w *Workspace) readText(l loc, limit int64) ([]byte, fs.FileInfo, error) {
	f, st, err := w.openRegular(l)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	shown := w.show(l)
	if st.Size() > limit {
		return nil, nil, fail(CodeFileTooLarge, "read parts of it with head or tail", map[string]any{"path": shown, "size": st.Size(), "limit": limit},
			"%s is %d bytes; the limit is %d", quote(shown), st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, w.fsError(shown, err)
	}
	if int64(len(b)) > limit {
		return nil, nil, fail(CodeFileTooLarge, "read parts of it with head or tail", map[string]any{"path": shown, "limit": limit},
			"%s grew beyond the limit of %d bytes", quote(shown), limit)
	}
	if !isText(b, false) {
		return nil, nil, notText(shown, b)
	}
	return b, st, nil
}

func notText(shown string, head []byte) error {
	mt, ok := mediaType(shown)
	if !ok {
		mt = http.DetectContentType(head)
	}
	return fail(CodeNotText, "read it with read_media (images, audio) or inspect it with file_info",
		map[string]any{"path": shown, "media_type": mt}, "%s is not UTF-8 text", quote(shown))
}

// kind is what a client path is on disk, for the entry predicate.
func (w *Workspace) kind(p string) string {
	l, err := w.resolve(p)
	if err != nil {
		return "outside"
	}
	if l.root == nil {
		return "dir"
	}
	st, err := l.root.fs.Stat(l.rel)
	if err != nil {
		var errno syscall.Errno
		if errors.Is(err, fs.ErrNotExist) || (errors.As(err, &errno) && errno == syscall.ENOTDIR) {
			return "missing"
		}
		return "outside"
	}
	if st.IsDir() {
		return "dir"
	}
	if !st.Mode().IsRegular() {
		return "binary"
	}
	if _, ok := mediaType(l.rel); ok {
		return "media"
	}
	f, _, err := w.openRegular(l)
	if err != nil {
		return "binary"
	}
	defer f.Close()
	buf := make([]byte, sniffBytes)
	n, _ := io.ReadFull(f, buf)
	if isText(buf[:n], n == sniffBytes) {
		return "text"
	}
	return "binary"
}

// maxProbedPaths bounds the paths the entry predicate looks at per request.
const maxProbedPaths = 2000

// entries computes the external predicate entry(Path, Kind) for the paths
// of the request's focus, mentioned and previewed facts.
func (a *actions) entries(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	seen := map[string]bool{}
	var out [][]any
	for _, f := range in.Facts {
		if f.Pred != "focus" && f.Pred != "mentioned" && f.Pred != "previewed" || len(f.Args) == 0 {
			continue
		}
		p, _ := f.Args[0].(string)
		if seen[p] {
			continue
		}
		if len(seen) >= maxProbedPaths {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		seen[p] = true
		out = append(out, []any{p, a.w.kind(p)})
	}
	return out, nil
}

// glob is a checked glob pattern with the semantics of
// github.com/bmatcuk/doublestar (path.Match's, plus "**" and {a,b}): "*",
// "?" and [...] (also [!...] and [^...]) stay within a path segment,
// "**" as a whole segment spans segments, {a,b} is either, and "\"
// escapes. A pattern without "/" matches the base name; otherwise the
// path below the search directory.
type glob struct {
	pattern  string
	basename bool
}

func compileGlob(pattern string) (*glob, error) {
	bad := func(why string) error {
		return fail(CodeInvalidPattern, "use *, ?, **, [abc] and {a,b}", map[string]any{"pattern": bounded(pattern)}, "the glob %s %s", quote(pattern), why)
	}
	if pattern == "" || len(pattern) > 1000 {
		return nil, bad("is empty or longer than 1000 bytes")
	}
	if !doublestar.ValidatePattern(pattern) {
		return nil, bad("is not valid (an unclosed [ or {, or a trailing \\)")
	}
	return &glob{pattern: segmentClasses(pattern), basename: !strings.Contains(pattern, "/")}, nil
}

// segmentClasses adds "/" to every negated class of pattern ([!...] and
// [^...]), so that a class stays within a path segment as "*" and "?"
// do: doublestar, like path.Match, lets "[!a]" match "/".
func segmentClasses(pattern string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			b.WriteString(pattern[i : i+2])
			i++
		case c == '[' && i+1 < len(pattern) && (pattern[i+1] == '!' || pattern[i+1] == '^'):
			end := classEnd(pattern, i+2)
			if end < 0 {
				b.WriteString(pattern[i:])
				return b.String()
			}
			b.WriteString(pattern[i:end] + "/]")
			i = end
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// classEnd is the index of the "]" closing a class whose members start
// at from (a "]" first is a member), or -1.
func classEnd(pattern string, from int) int {
	for j := from; j < len(pattern); j++ {
		switch {
		case pattern[j] == '\\':
			j++
		case pattern[j] == ']' && j > from:
			return j
		}
	}
	return -1
}

// match reports whether rel (relative to the search directory, "/"
// separated) matches.
func (g *glob) match(rel string) bool {
	if g.basename {
		rel = path.Base(rel)
	}
	ok, _ := doublestar.Match(g.pattern, rel)
	return ok
}

// walkFunc visits one entry below a walk's start; rel is relative to it.
type walkFunc func(at loc, rel string, d fs.DirEntry) error

// Why a walk or a search stopped before it covered everything.
const (
	stopEntries = "entries" // MaxScanFiles entries visited
	stopDepth   = "depth"   // directories deeper than MaxWalkDepth not entered
	stopBytes   = "bytes"   // MaxSearchBytes read
	stopTime    = "time"    // MaxSearchTime passed
	stopMatches = "matches" // MaxMatches lines or MaxEntries paths found
)

// walkBatch is how many entries of a directory a walk reads at a time.
const walkBatch = 512

// walk visits the entries below l (all roots for the virtual top) without
// following symbolic links, stopping after MaxScanFiles entries and
// entering no directory deeper than MaxWalkDepth levels below l. It reads
// each directory in batches of walkBatch entries, visited in lexical
// order within a batch (a directory up to that size in lexical order), so
// a directory of a million entries costs no more memory than a small one.
// fn may return fs.SkipDir for a directory (not entered) or fs.SkipAll. It
// returns why it stopped early ("" when it visited everything) and how
// many entries it visited.
func (w *Workspace) walk(ctx context.Context, l loc, fn walkFunc) (stop string, visited int, err error) {
	starts := []loc{l}
	if l.root == nil {
		starts = starts[:0]
		for _, r := range w.roots {
			starts = append(starts, loc{root: r, rel: "."})
		}
	}
	wk := &walker{w: w, ctx: ctx, fn: fn}
	for _, s := range starts {
		shown := w.show(s)
		st, err := s.root.fs.Stat(s.rel)
		if err != nil {
			return wk.stop, wk.visited, w.fsError(shown, err)
		}
		if !st.IsDir() {
			return wk.stop, wk.visited, fail(CodeNotADirectory, "name a directory", map[string]any{"path": shown}, "%s is not a directory", quote(shown))
		}
		if l.root == nil {
			wk.prefix = s.root.name + "/"
		}
		err = wk.dir(s.root, s.rel, "", 1)
		if err == fs.SkipAll {
			err = nil
		}
		if err != nil {
			return wk.stop, wk.visited, err
		}
		if wk.stop == stopEntries {
			break
		}
	}
	return wk.stop, wk.visited, nil
}

// walker is the state of one walk.
type walker struct {
	w       *Workspace
	ctx     context.Context
	fn      walkFunc
	prefix  string
	stop    string
	visited int
}

// dir visits the entries of the directory p (rel below the walk's start,
// "" for the start itself; depth the level of its entries) and below.
func (wk *walker) dir(r *root, p, rel string, depth int) error {
	f, err := r.fs.Open(p)
	if err != nil {
		if rel == "" {
			return wk.w.fsError(wk.w.show(loc{root: r, rel: p}), err)
		}
		return nil // unreadable below the start: skip it
	}
	defer f.Close()
	for {
		batch, err := f.ReadDir(walkBatch)
		sort.Slice(batch, func(i, j int) bool { return batch[i].Name() < batch[j].Name() })
		for _, d := range batch {
			if cerr := wk.ctx.Err(); cerr != nil {
				return cerr
			}
			if wk.visited >= wk.w.cfg.MaxScanFiles {
				wk.stop = stopEntries
				return fs.SkipAll
			}
			wk.visited++
			child, childRel := d.Name(), d.Name()
			if p != "." {
				child = p + "/" + child
			}
			if rel != "" {
				childRel = rel + "/" + childRel
			}
			switch err := wk.fn(loc{root: r, rel: child}, wk.prefix+childRel, d); {
			case err == fs.SkipDir:
				continue
			case err != nil:
				return err
			}
			if !d.IsDir() {
				continue
			}
			if depth >= wk.w.cfg.MaxWalkDepth {
				wk.stop = stopDepth
				continue
			}
			if err := wk.dir(r, child, childRel, depth+1); err != nil {
				return err
			}
		}
		if err != nil || len(batch) == 0 {
			return nil // io.EOF, or unreadable from here on: skip the rest
		}
	}
}

// mentionedFacts builds mentioned facts for up to n paths.
func mentionedFacts(paths []string, n int) []protocol.Fact {
	var out []protocol.Fact
	for i, p := range paths {
		if i == n {
			break
		}
		out = append(out, protocol.NewFact("mentioned", p))
	}
	return out
}

// linkCount is the number of hard links of a file (1 when unknown).
func linkCount(st fs.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Nlink)
	}
	return 1
}
