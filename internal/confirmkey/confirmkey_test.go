package confirmkey

import (
	"os"
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
