package cli

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser"
)

// TestBrowserFlags: the browser flags reach browser.Config; host:port
// entries pass the flag and the config file alike.
func TestBrowserFlags(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var b browserFlags
	addBrowserFlags(fs, &b)
	err := fs.Parse([]string{"--browser-allowed-hosts", "127.0.0.1:8080, app.test", "--browser-max-pages", "2",
		"--browser-max-queued", "-1", "--browser-queue-wait", "3s", "--browser-page-memory-mb", "256",
		"--browser-max-console", "50", "--browser-max-load-time", "15s", "--browser-health-interval", "2s",
		"--browser-max-sessions", "3", "--browser-max-sessions-per-identity", "1", "--browser-max-session-tabs", "2",
		"--browser-session-idle", "90s", "--browser-upload-dir", "/srv/uploads", "--browser-allow-scripts"})
	if err != nil {
		t.Fatal(err)
	}
	var c browser.Config
	b.apply(&c)
	want := browser.Config{AllowedHosts: []string{"127.0.0.1:8080", "app.test"}, MaxPages: 2, MaxQueued: -1,
		QueueWait: 3 * time.Second, PageMemoryMB: 256, MaxConsole: 50, MaxLoadTime: 15 * time.Second, HealthInterval: 2 * time.Second,
		MaxSessions: 3, MaxSessionsPerIdentity: 1, MaxSessionTabs: 2, SessionIdle: 90 * time.Second,
		UploadDir: "/srv/uploads", AllowScripts: true}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("config %+v\nwant %+v", c, want)
	}

	dir := t.TempDir()
	for _, tc := range []struct{ dir, want string }{
		{dir, ""},
		{filepath.Join(dir, "missing"), "--browser-upload-dir"},
		{filepath.Join(dir, "file"), "is not a directory"},
	} {
		_ = os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
		err := (&browserFlags{uploadDir: tc.dir}).check()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("upload dir %s: %v, want %q", tc.dir, err, tc.want)
		}
	}
	good := filepath.Join(dir, "good.json")
	_ = os.WriteFile(good, []byte(`{"browser":{"allowed_hosts":["127.0.0.1:8080","[::1]:9000","shop.test"]}}`), 0o644)
	if _, err := loadConfig(good); err != nil {
		t.Errorf("host:port entries: %v", err)
	}
	sessions := filepath.Join(dir, "sessions.json")
	_ = os.WriteFile(sessions, []byte(`{"browser":{"max_sessions":3,"max_sessions_per_identity":1,"max_session_tabs":2,"session_idle_ms":90000,"upload_dir":`+
		strconv.Quote(dir)+`,"allow_scripts":true}}`), 0o644)
	if c, err := loadConfig(sessions); err != nil || c.Browser.MaxSessions != 3 || c.Browser.SessionIdleMS != 90000 || c.Browser.UploadDir != dir || !c.Browser.AllowScripts {
		t.Errorf("session keys: %v %+v", err, c)
	}
	for name, body := range map[string]string{
		"negative.json": `{"browser":{"max_sessions":-1}}`,
		"upload.json":   `{"browser":{"upload_dir":"/no/such/dir"}}`,
	} {
		p := filepath.Join(dir, name)
		_ = os.WriteFile(p, []byte(body), 0o644)
		if _, err := loadConfig(p); err == nil || !strings.Contains(err.Error(), "browser.") {
			t.Errorf("%s: %v", body, err)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"browser":{"allowed_hosts":["shop.test:http"]}}`), 0o644)
	if _, err := loadConfig(bad); err == nil || !strings.Contains(err.Error(), "allowed_hosts[0]") {
		t.Errorf("a bad port: %v", err)
	}
}
