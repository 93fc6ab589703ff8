package serve

import (
	"log/slog"
	"runtime/debug"
	"testing"
)

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1024", 1024, true},
		{"512MiB", 512 << 20, true},
		{"2GiB", 2 << 30, true},
		{"64K", 64 << 10, true},
		{"3 G", 3 << 30, true},
		{"0", 0, false},
		{"-5MiB", 0, false},
		{"lots", 0, false},
		{"1.5GiB", 0, false},
	} {
		got, err := parseBytes(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestGCSettingsApply is not parallel: the collector's settings are the
// process's, which the serve tests set too.
func TestGCSettingsApply(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
	logger := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name        string
		g           gcSettings
		wantPercent int
		wantLimit   int64
	}{
		{"defaults", gcSettings{percent: -1}, defaultGCPercent, defaultMemoryLimit},
		{"flags", gcSettings{percent: 150, limit: "256MiB"}, 150, 256 << 20},
	} {
		if err := tc.g.apply(nil, logger); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		p := debug.SetGCPercent(100)
		if p != tc.wantPercent || debug.SetMemoryLimit(-1) != tc.wantLimit {
			t.Errorf("%s: gc percent %d, limit %d; want %d, %d", tc.name, p, debug.SetMemoryLimit(-1), tc.wantPercent, tc.wantLimit)
		}
	}
	if err := (gcSettings{percent: -1, limit: "huge"}).apply(nil, logger); err == nil {
		t.Error("apply accepted --memory-limit huge")
	}
}
