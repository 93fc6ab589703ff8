package chrome

import (
	"bufio"
	"bytes"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// limitRenderers kills every renderer process under the browser process
// pid whose resident memory is above limit bytes. The page of a killed
// renderer sees its target crash and reports the page as stopped; other
// pages (other browser contexts never share a renderer) go on.
func limitRenderers(pid int, limit int64, log *slog.Logger) {
	for _, p := range descendants(pid, 4) {
		cmd, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		// Pages' renderers only: not the browser's own user interface.
		if err != nil || !bytes.Contains(cmd, []byte("--type=renderer")) || bytes.Contains(cmd, []byte("--top-chrome-webui")) {
			continue
		}
		if rss := residentBytes(p); rss > limit {
			if err := syscall.Kill(p, syscall.SIGKILL); err == nil {
				log.Warn("browser renderer killed: over the page memory limit", "pid", p, "rss_mib", rss>>20, "limit_mib", limit>>20)
			}
		}
	}
}

// descendants lists the processes under pid, depth levels deep.
func descendants(pid, depth int) []int {
	if depth == 0 {
		return nil
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(raw)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
			out = append(out, descendants(c, depth-1)...)
		}
	}
	return out
}

// residentBytes is a process's VmRSS, 0 when unknown.
func residentBytes(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
