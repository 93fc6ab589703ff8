package serverconf

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/settings"
)

// TestBrowserFlags: the browser flags reach browser.Config; host:port
// entries pass the flag and the config file alike.
func TestBrowserFlags(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var b BrowserFlags
	AddBrowserFlags(fs, &b)
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
	want := browser.Config{Config: chrome.Config{AllowedHosts: []string{"127.0.0.1:8080", "app.test"}, MaxPages: 2, MaxQueued: -1,
		QueueWait: 3 * time.Second, PageMemoryMB: 256, MaxConsole: 50, MaxLoadTime: 15 * time.Second, HealthInterval: 2 * time.Second,
		MaxSessions: 3, MaxSessionsPerIdentity: 1, MaxSessionTabs: 2, SessionIdle: 90 * time.Second,
		UploadDir: "/srv/uploads", AllowScripts: true}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("config %+v\nwant %+v", c, want)
	}

	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--browser-upload-dir", dir}, ""},
		{nil, ""},
		{[]string{"--browser-upload-dir", filepath.Join(dir, "missing")}, "--browser-upload-dir must be an existing directory"},
		{[]string{"--browser-upload-dir", filepath.Join(dir, "file")}, "is not a directory"},
		{[]string{"--browser-max-queued", "-1"}, ""},
		{[]string{"--browser-max-queued", "-2"}, "--browser-max-queued must be at least -1 (got -2)"},
		{[]string{"--browser-max-pages", "-3"}, "--browser-max-pages must not be negative (got -3)"},
		{[]string{"--browser-session-idle", "-1s"}, "--browser-session-idle must not be negative (got -1s)"},
		{[]string{"--browser-allowed-hosts", "ok.test,http://bad.test/"}, "--browser-allowed-hosts[1] must be a host name"},
	} {
		_ = os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
		var b BrowserFlags
		browserFlagsOf(t, &b, tc.args...)
		err := b.check()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	good := filepath.Join(dir, "good.json")
	_ = os.WriteFile(good, []byte(`{"browser":{"allowed_hosts":["127.0.0.1:8080","[::1]:9000","shop.test"]}}`), 0o644)
	if _, err := Load(good); err != nil {
		t.Errorf("host:port entries: %v", err)
	}
	sessions := filepath.Join(dir, "sessions.json")
	_ = os.WriteFile(sessions, []byte(`{"browser":{"max_sessions":3,"max_sessions_per_identity":1,"max_session_tabs":2,"session_idle_ms":90000,"upload_dir":`+
		strconv.Quote(dir)+`,"allow_scripts":true}}`), 0o644)
	if c, err := Load(sessions); err != nil || c.Browser.MaxSessions != 3 || c.Browser.SessionIdle != 90*time.Second || c.Browser.UploadDir != dir || !c.Browser.AllowScripts {
		t.Errorf("session keys: %v %+v", err, c)
	}
	for name, tc := range map[string]struct{ body, want string }{
		"negative.json": {`{"browser":{"max_sessions":-1}}`, "negative.json: browser.max_sessions must not be negative (got -1)"},
		"upload.json":   {`{"browser":{"upload_dir":"/no/such/dir"}}`, "upload.json: browser.upload_dir must be an existing directory"},
		"queued.json":   {`{"browser":{"max_queued":-2}}`, "queued.json: browser.max_queued must be at least -1"},
		"unknown.json":  {"{\"browser\":{\n\"max_pages\":2,\n\"max_tabs\":1}}", "unknown.json:3: browser.max_tabs: json: unknown field \"max_tabs\""},
		"type.json":     {"{\"browser\":{\n\"queue_wait_ms\":\"5s\"}}", "type.json:2: browser.queue_wait_ms: json: cannot unmarshal string"},
	} {
		p := filepath.Join(dir, name)
		_ = os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"browser":{"allowed_hosts":["shop.test:http"]}}`), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "allowed_hosts[0]") {
		t.Errorf("a bad port: %v", err)
	}
}

// browserFlagsOf registers the browser flags on a new flag set and parses
// args: flags given with an empty value are left out (not given).
func browserFlagsOf(t *testing.T, b *BrowserFlags, args ...string) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	AddBrowserFlags(fs, b)
	var given []string
	for i := 0; i+1 < len(args); i += 2 {
		if args[i+1] != "" {
			given = append(given, args[i], args[i+1])
		}
	}
	if err := fs.Parse(given); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserFlagDefaults: every browser flag's default (as --help shows
// it) is chrome.DefaultConfig's value of its setting, and every setting
// of chrome.Config has its flag.
func TestBrowserFlagDefaults(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var b BrowserFlags
	AddBrowserFlags(fs, &b)
	d := chrome.DefaultConfig()
	for _, f := range settings.Fields(&d) {
		fl := fs.Lookup(f.Flag)
		if fl == nil {
			t.Errorf("setting %s: no flag --%s", f.Name, f.Flag)
			continue
		}
		if want := fmt.Sprint(f.Value(&d).Interface()); f.Value(&d).Kind() != reflect.Slice && fl.DefValue != want {
			t.Errorf("--%s: default %q, want %q", f.Flag, fl.DefValue, want)
		}
		if want := strings.Join(d.AllowedHosts, ","); f.Name == "AllowedHosts" && fl.DefValue != want {
			t.Errorf("--%s: default %q, want %q", f.Flag, fl.DefValue, want)
		}
	}
}
