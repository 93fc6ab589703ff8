package chrome_test

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/settings"
)

var update = flag.Bool("update-docs", false, "rewrite the settings table of docs/browser.md")

// TestConfigValidate: each invalid setting is reported by its name; a
// zero and a default Config are valid.
func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	_ = os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		name string
		cfg  chrome.Config
		want []string // the errors, each naming its setting; none: valid
	}{
		{"zero", chrome.Config{}, nil},
		{"defaults", chrome.DefaultConfig(), nil},
		{"no queue", chrome.Config{MaxQueued: -1}, nil},
		{"queue below -1", chrome.Config{MaxQueued: -2}, []string{"MaxQueued must be at least -1 (got -2)"}},
		{"negative numbers", chrome.Config{MaxPages: -1, MaxPageBytes: -5, MaxSessionTabs: -2},
			[]string{"MaxPageBytes must not be negative (got -5)", "MaxPages must not be negative (got -1)", "MaxSessionTabs must not be negative (got -2)"}},
		{"negative durations", chrome.Config{MaxLoadTime: -time.Second, SessionIdle: -time.Minute},
			[]string{"MaxLoadTime must not be negative (got -1s)", "SessionIdle must not be negative (got -1m)"}},
		{"hosts", chrome.Config{AllowedHosts: []string{"app.test:8443", "[::1]:9000", "*", "http://x.test/", "a.test:http"}},
			[]string{"AllowedHosts[3] must be a host name", "AllowedHosts[4] must be a host name"}},
		{"upload dir", chrome.Config{UploadDir: dir}, nil},
		{"upload dir missing", chrome.Config{UploadDir: filepath.Join(dir, "missing")}, []string{"UploadDir must be an existing directory (stat "}},
		{"upload dir a file", chrome.Config{UploadDir: file}, []string{"UploadDir must be an existing directory: " + file + " is not a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := settings.Split(tc.cfg.Validate())
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %q, want %q", errs, tc.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %q, want %q...", e, tc.want[i])
				}
			}
		})
	}
}

// TestConfigDefaults: a zero Config stands for DefaultConfig; values set
// stay; MaxQueued -1 stays none; every setting has a config key (a
// duration's in milliseconds, ..._ms), a --browser-* flag and a help line.
func TestConfigDefaults(t *testing.T) {
	if got, want := (chrome.Config{}).WithDefaults(), chrome.DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("zero config with defaults %+v\nwant %+v", got, want)
	}
	c := chrome.Config{MaxPages: 1, MaxQueued: -1, SessionIdle: time.Second, Path: "none", AllowedHosts: []string{}}.WithDefaults()
	if c.MaxPages != 1 || c.MaxQueued != -1 || c.SessionIdle != time.Second || c.Path != "none" || c.AllowedHosts == nil || len(c.AllowedHosts) != 0 ||
		c.MaxLoadTime != chrome.DefaultMaxLoadTime {
		t.Errorf("with defaults %+v", c)
	}
	if c.WithDefaults().MaxQueued != -1 {
		t.Error("WithDefaults is not idempotent for MaxQueued -1")
	}
	fields := settings.Fields(&chrome.Config{})
	if len(fields) != reflect.TypeFor[chrome.Config]().NumField()-2 { // all but OnHealth and Logger
		t.Errorf("%d settings of %d fields: a field without its key tag", len(fields), reflect.TypeFor[chrome.Config]().NumField())
	}
	for _, f := range fields {
		isDuration := f.Value(&chrome.Config{}).Type() == reflect.TypeFor[time.Duration]()
		if isDuration != strings.HasSuffix(f.Key, "_ms") || !strings.HasPrefix(f.Flag, "browser-") || f.Help == "" {
			t.Errorf("setting %s: key %q, flag %q, help %q", f.Name, f.Key, f.Flag, f.Help)
		}
	}
}

// TestConfigDocumented: docs/browser.md lists every setting with its flag,
// config key and default, as settings.Table writes them from
// DefaultConfig (go test -run TestConfigDocumented -update-docs rewrites it).
func TestConfigDocumented(t *testing.T) {
	d := chrome.DefaultConfig()
	if err := settings.CheckDoc(filepath.Join("..", "..", "..", "docs", "browser.md"), "browser", settings.Table(&d, "browser"), *update); err != nil {
		t.Error(err)
	}
}
