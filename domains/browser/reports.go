package browser

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// CodeReportRequestIDTooLong is a report asked for a request id longer
// than maxReportRequestID: the client's input, refused before any file is
// touched (a 4xx, not a server failure), and echoed only by its length.
const CodeReportRequestIDTooLong protocol.Code = "x-browser_request_id_too_long"

// requestIDCode is the registry entry of CodeReportRequestIDTooLong.
var requestIDCode = protocol.CodeInfo{Code: CodeReportRequestIDTooLong, HTTPStatus: http.StatusBadRequest, Recoverable: false,
	Description: "write_diagnosis_report was asked for a request_id longer than 200 bytes; a report's directory is named by it, and the browser's own ids are short (r1, r2, ...)"}

// maxOfferedRequestID bounds the request ids the rules offer as the
// request_id of diagnose_causal_chain and write_diagnosis_report
// (request_id_fits): an enum holding a client's 1 MiB id made a schema
// over the server's schema limit, an internal error at invoke.
const maxOfferedRequestID = 4096

// requestIDsFit computes the external predicate request_id_fits: the
// failed requests of the facts whose id is at most maxOfferedRequestID
// bytes.
func requestIDsFit(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	var out [][]any
	for _, id := range failedIDs(in.Facts) {
		if len(id) <= maxOfferedRequestID {
			out = append(out, []any{id})
		}
	}
	return out, ctx.Err()
}

// maxReportRequestID bounds the request id a report is written for: its
// directory name, diagnosis-<id>, stays far below the file system's 255
// bytes (a 246-byte id made the write fail with execution_failed, and a
// 1 MiB one was logged whole).
const maxReportRequestID = 200

// reports is the directory diagnosis reports are written to. Every access
// goes through os.Root, so a symlink planted in the directory cannot send
// a write outside it; the directory itself must be a real directory (not
// a symlink) owned by the server's user. Reports for one request live in
// their own subdirectory, diagnosis-<request id>/, so whether a report
// exists is one Stat, however many reports there are (see exist).
type reports struct {
	dir string
	// recheck is how long exist trusts what it found at dir (the
	// directory it kept open, or that there is none) before it looks at
	// the path again; 0: at every call. now is the clock (nil: time.Now).
	recheck time.Duration
	now     func() time.Time

	// reading is the directory as exist last opened it, kept open for
	// later calls (see reader); nil with checked set: dir did not exist
	// then. A write opens the directory afresh every time.
	mu      sync.RWMutex
	reading *os.Root
	readFI  fs.FileInfo // Lstat of dir when reading was opened
	checked time.Time   // when dir was last looked at; zero: at the next call
}

// recheckReports is how long the report directory found is trusted
// (reports.recheck) by the domain's report_exists.
const recheckReports = time.Second

// defaultReportDir is private to the server's user: the user cache
// directory, or a per-user directory under the temp dir.
func defaultReportDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "manglecp", "reports")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("manglecp-reports-%d", os.Getuid()))
}

// errNoReports is open's answer when the directory does not exist and
// create is false.
var errNoReports = errors.New("the report directory does not exist yet")

// open opens the report directory as an os.Root, creating it (0700) when
// create is set. It refuses a symlink, a non-directory and a directory
// owned by another user.
func (r *reports) open(create bool) (*os.Root, error) {
	if create {
		if err := os.MkdirAll(r.dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating the report directory: %w", err)
		}
	}
	fi, err := r.check()
	if err != nil {
		return nil, err
	}
	return r.openChecked(fi)
}

// check is Lstat of the report directory, refused (an error) when it is a
// symlink, not a directory or owned by another user; errNoReports when it
// does not exist.
func (r *reports) check() (fs.FileInfo, error) {
	fi, err := os.Lstat(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoReports
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return nil, fmt.Errorf("the report directory %s is a symlink or not a directory; refusing it", r.dir)
	}
	if err := ownedBySelf(fi); err != nil {
		return nil, fmt.Errorf("the report directory %s: %w; refusing it", r.dir, err)
	}
	return fi, nil
}

// openChecked opens the directory check found as fi.
func (r *reports) openChecked(fi fs.FileInfo) (*os.Root, error) {
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, err
	}
	// The directory opened must be the one checked (no swap in between).
	if st, err := root.Stat("."); err != nil || !os.SameFile(fi, st) {
		root.Close()
		return nil, fmt.Errorf("the report directory %s changed while it was opened", r.dir)
	}
	return root, nil
}

// requestDir is the subdirectory of a request's reports.
func requestDir(requestID string) string {
	return "diagnosis-" + unsafeName.ReplaceAllString(requestID, "_")
}

// write stores a report as requestDir(requestID)/name and returns its
// path relative to the report directory. The file is created exclusively
// under a temporary name and renamed into place, so an existing file or
// symlink of that name is replaced, never written through.
func (r *reports) write(requestID, name string, data []byte) (string, error) {
	if len(requestID) > maxReportRequestID {
		return "", protocol.Errorf(CodeReportRequestIDTooLong, "request_id is %d bytes; a report is written for a request id of at most %d bytes", len(requestID), maxReportRequestID)
	}
	root, err := r.open(true)
	if err != nil {
		return "", err
	}
	defer root.Close()
	defer r.forget() // the directory may be new: exist looks again
	sub := requestDir(requestID)
	if err := root.Mkdir(sub, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if fi, err := root.Lstat(sub); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s in the report directory is not a directory", sub)
	}
	rel := sub + "/" + name
	tmp := rel + ".tmp-" + randomSuffix()
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = root.Remove(tmp)
		return "", werr
	}
	return rel, nil
}

// exist returns which of the request ids have a report. A few ids cost
// one Stat each; for many, a directory of at most a few times as many
// entries is listed once instead (a larger one is still asked id by id,
// so the cost stays bounded by the ids asked about).
func (r *reports) exist(requestIDs []string) ([]string, error) {
	root, done, err := r.reader()
	if errors.Is(err, errNoReports) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer done()
	if len(requestIDs) > statsPerListing {
		if dirs, ok := listDirs(root, listPerID*len(requestIDs)); ok {
			var out []string
			for _, id := range requestIDs {
				if dirs[requestDir(id)] {
					out = append(out, id)
				}
			}
			return out, nil
		}
	}
	var out []string
	for _, id := range requestIDs {
		if fi, err := root.Lstat(requestDir(id)); err == nil && fi.IsDir() {
			out = append(out, id)
		}
	}
	return out, nil
}

// reader returns the report directory opened for reading, and done to
// call once it is no longer read (errNoReports when there is none). What
// it found at dir is trusted for recheck: the directory stays open, and a
// call within that time costs no system call of its own. After it, the
// path is looked at again with open's checks (not a symlink, a
// directory, the server's own): the directory kept is used on while it
// is the same file (os.SameFile; the open directory keeps its inode from
// being reused), and otherwise (it was replaced, removed or created
// since) it is closed and the new one opened. So a directory replaced by
// a symlink is refused within recheck, and until then the real directory
// opened before is read, never the link's target; a report written
// into the directory kept (by any process) is seen at once, and a write
// of this server makes the next call look again.
func (r *reports) reader() (root *os.Root, done func(), err error) {
	r.mu.RLock()
	if r.fresh() {
		if r.reading != nil {
			return r.reading, r.mu.RUnlock, nil
		}
		r.mu.RUnlock()
		return nil, nil, errNoReports
	}
	r.mu.RUnlock()
	r.mu.Lock()
	if root, err = r.lookLocked(); err != nil {
		r.mu.Unlock()
		return nil, nil, err
	}
	return root, r.mu.Unlock, nil
}

// fresh reports whether what reader found last is still trusted.
func (r *reports) fresh() bool {
	if r.recheck <= 0 || r.checked.IsZero() {
		return false
	}
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	return now().Sub(r.checked) < r.recheck
}

// lookLocked looks at dir again (r.mu held): it keeps the directory found
// open, or records that there is none.
func (r *reports) lookLocked() (*os.Root, error) {
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	r.checked = time.Time{}
	fi, err := r.check()
	if errors.Is(err, errNoReports) {
		r.dropLocked()
		r.checked = now()
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if r.reading == nil || !os.SameFile(r.readFI, fi) {
		opened, err := r.openChecked(fi)
		if err != nil {
			return nil, err
		}
		r.dropLocked()
		r.reading, r.readFI = opened, fi
	}
	r.checked = now()
	return r.reading, nil
}

// dropLocked closes the directory kept (r.mu held: no call reads it).
func (r *reports) dropLocked() error {
	if r.reading == nil {
		return nil
	}
	err := r.reading.Close()
	r.reading, r.readFI = nil, nil
	return err
}

// forget makes the next reader look at dir again.
func (r *reports) forget() {
	r.mu.Lock()
	r.checked = time.Time{}
	r.mu.Unlock()
}

// close closes the directory kept open for reading.
func (r *reports) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checked = time.Time{}
	return r.dropLocked()
}

// Above statsPerListing ids, exist lists the directory when it has at
// most listPerID entries per id.
const (
	statsPerListing = 8
	listPerID       = 4
)

// listDirs returns the names of the subdirectories (not symlinks) of
// root, when it has at most limit entries; otherwise false.
func listDirs(root *os.Root, limit int) (map[string]bool, bool) {
	f, err := root.Open(".")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	entries, err := f.ReadDir(limit + 1)
	if (err != nil && !errors.Is(err, io.EOF)) || len(entries) > limit {
		return nil, false
	}
	dirs := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			dirs[e.Name()] = true
		}
	}
	return dirs, true
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
