package serve

import (
	"flag"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/serverconf"
)

// TestTrustedProxiesSettings: --trusted-proxies and --forwarded-header,
// or the config file's trusted_proxies and forwarded_header (the flags
// win), become the HTTP options; bad values are refused naming the
// setting.
func TestTrustedProxiesSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		config     string // "" for none
		args       []string
		wantErr    string
		wantPrefix string
		wantHeader string
	}{
		{name: "none"},
		{name: "config", config: `{"trusted_proxies": ["10.0.0.0/8", "127.0.0.1"], "forwarded_header": "Forwarded"}`,
			wantPrefix: "10.0.0.0/8,127.0.0.1/32", wantHeader: "Forwarded"},
		{name: "flags win", config: `{"trusted_proxies": ["10.0.0.0/8"]}`, args: []string{"--trusted-proxies", "192.0.2.0/24,::1", "--forwarded-header", "x-forwarded-for"},
			wantPrefix: "192.0.2.0/24,::1/128", wantHeader: "x-forwarded-for"},
		{name: "bad flag", args: []string{"--trusted-proxies", "nginx"}, wantErr: "--trusted-proxies"},
		{name: "bad header flag", args: []string{"--forwarded-header", "X-Real-IP"}, wantErr: "--forwarded-header"},
		{name: "bad config", config: `{"trusted_proxies": ["10.0.0.0/40"]}`, wantErr: "trusted_proxies"},
		{name: "bad config header", config: `{"forwarded_header": "X-Client"}`, wantErr: "forwarded_header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pf proxyFlags
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			pf.register(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			var err error
			if tt.config != "" {
				var c *serverconf.File
				if c, err = serverconf.Load(clitest.WriteFile(t, t.TempDir(), "c.json", tt.config)); err == nil {
					pf.fromConfig(c)
				}
			}
			var prefixes []string
			var header string
			if err == nil {
				p, h, rerr := pf.resolve()
				for _, x := range p {
					prefixes = append(prefixes, x.String())
				}
				header, err = h, rerr
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(prefixes, ","); got != tt.wantPrefix || header != tt.wantHeader {
				t.Errorf("got %q %q, want %q %q", got, header, tt.wantPrefix, tt.wantHeader)
			}
		})
	}
}
