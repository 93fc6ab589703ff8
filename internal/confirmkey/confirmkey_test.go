package confirmkey

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestDefault: the environment variable wins; otherwise the key file is
// created once (0600) and the same key is returned afterwards.
func TestDefault(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(EnvVar, "from the environment")
	if k, src, err := Default(); err != nil || string(k) != "from the environment" || src != EnvVar {
		t.Fatalf("with %s: %q %q %v", EnvVar, k, src, err)
	}
	t.Setenv(EnvVar, "")
	k1, p, err := Default()
	if err != nil || len(k1) == 0 {
		t.Fatalf("first use: %q %v", k1, err)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v %v, want mode 0600", p, st, err)
	}
	k2, _, err := Default()
	if err != nil || string(k2) != string(k1) {
		t.Fatalf("second use made another key: %q %q %v", k1, k2, err)
	}
	if r, err := Read(); err != nil || string(r) != string(k1) {
		t.Fatalf("Read: %q %v", r, err)
	}
}

// TestKeysInAGivenEnvironment: Keys reads only the environment it is
// given (no t.Setenv: it runs beside other tests): the variable wins, the
// key file goes under that environment's XDG_CONFIG_HOME (else
// HOME/.config), and a relative XDG_CONFIG_HOME or no HOME is an error.
func TestKeysInAGivenEnvironment(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) Keys {
		return Keys{Getenv: func(k string) string { return vars[k] }}
	}
	if k, src, err := env(map[string]string{EnvVar: "given"}).Default(); err != nil || string(k) != "given" || src != EnvVar {
		t.Fatalf("with %s: %q %q %v", EnvVar, k, src, err)
	}
	xdg := t.TempDir()
	keys := env(map[string]string{"XDG_CONFIG_HOME": xdg})
	k1, p, err := keys.Default()
	if err != nil || p != filepath.Join(xdg, "manglecp", "confirmation.key") {
		t.Fatalf("Default = %q %q %v", k1, p, err)
	}
	if r, err := keys.Read(); err != nil || string(r) != string(k1) {
		t.Fatalf("Read: %q %v", r, err)
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" || runtime.GOOS == "ios" || runtime.GOOS == "plan9" {
		return
	}
	home := t.TempDir()
	if p, err := env(map[string]string{"HOME": home}).Path(); err != nil || p != filepath.Join(home, ".config", "manglecp", "confirmation.key") {
		t.Errorf("HOME only: %q %v", p, err)
	}
	if _, err := env(map[string]string{"XDG_CONFIG_HOME": "rel"}).Path(); err == nil {
		t.Error("a relative XDG_CONFIG_HOME was accepted")
	}
	if _, err := env(nil).Path(); err == nil {
		t.Error("no HOME and no XDG_CONFIG_HOME was accepted")
	}
	if h := env(nil).Hint(); h != "$XDG_CONFIG_HOME/manglecp/confirmation.key" {
		t.Errorf("Hint = %q", h)
	}
}
