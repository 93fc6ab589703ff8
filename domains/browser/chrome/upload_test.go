//go:build unix

package chrome_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
)

// TestUploadRefusesFIFO: issue 35 item 19. upload_file of a FIFO in the
// upload directory (or of a link to one) hung the call: opening a FIFO
// for reading waits for a writer. Only regular files are opened, and
// never blocking: the call is refused at once with an UploadError, and a
// regular file of the same directory still reaches the page.
func TestUploadRefusesFIFO(t *testing.T) {
	t.Parallel()
	ts, _ := opsApp(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if err := os.Symlink("pipe", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	b, id := opsSession(t, chrome.Config{UploadDir: dir}, ts.URL+"/upload")
	for _, name := range []string{"pipe", "link"} {
		done := make(chan error, 1)
		go func() {
			_, err := b.Session("ada", id).Upload(context.Background(), "Attachment", []string{name})
			done <- err
		}()
		select {
		case err := <-done:
			var ue *chrome.Error
			if !(errors.As(err, &ue) && ue.Kind == chrome.UploadRefused) || !strings.Contains(ue.Error(), "not a file in the upload directory") {
				t.Errorf("upload of %s: %v, want an UploadError", name, err)
			}
		case <-time.After(time.Minute): // a failure detector, not a timing: the fixed call does no I/O that waits
			t.Fatalf("upload of %s still waiting after a minute (the FIFO was opened)", name)
		}
	}
	o, err := b.Session("ada", id).Upload(context.Background(), "Attachment", []string{"hello.txt"})
	if err != nil || !strings.Contains(o.Text, "got hello.txt:5") {
		t.Errorf("upload of a regular file after them: %v %+v", err, o)
	}
}
