package chrome

import (
	"bufio"
	"bytes"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/manglecp/manglecp/internal/child"
)

// A page's memory is more than its renderer's: what a page hands to the
// browser lives in the browser's processes. A Blob's bytes (new Blob,
// URL.createObjectURL, a fetched body read as a blob) are copied into
// the browser process, and in the off-the-record browser contexts the
// pages run in they stay in memory there, not on disk: a live page held
// 1.5 GB of Blobs in the browser process while its renderer stayed under
// the 512 MiB page limit. Chromium does not say which browser context
// holds how much, so the watch attributes the growth of the browser's
// shared processes (the browser process and its utility processes: the
// network and storage services) to the renderers that made it: the bytes
// travel from a renderer through fresh shared memory that the renderer
// writes, one minor page fault per page. Each look splits the growth
// since the last look among the renderers in proportion to the minor
// faults each took meanwhile (a renderer spinning its script takes
// none); a shrink lowers every attribution in proportion. A renderer
// whose own resident memory plus what is attributed to it passes the
// page limit is killed like one over the limit by itself: its page
// reports that it was stopped, and its Blobs are freed with it. Pages of
// other browser contexts never share its renderer and go on.

// memWatch is what the memory watch of one browser process keeps between
// looks (see [memWatch.look]).
type memWatch struct {
	started bool
	shared  int64         // anonymous resident memory of the shared processes at the last look
	faults  map[int]int64 // minor faults of each renderer at the last look
	held    map[int]int64 // shared memory attributed to each renderer, bytes
}

// minHeld is the least attributed memory for which a renderer is killed
// for it: below it, what a renderer holds itself decides (the browser
// grows by some MiB with every page it opens, which is attributed too).
func minHeld(limit int64) int64 { return limit / 4 }

// look bounds the memory of the pages of the browser process pid: it
// kills every renderer whose resident memory, plus the memory of the
// browser's shared processes attributed to it, is above limit bytes.
func (w *memWatch) look(pid int, limit int64, log *slog.Logger) {
	if w.faults == nil {
		w.faults, w.held = map[int]int64{}, map[int]int64{}
	}
	shared := anonBytes(pid)
	faults := map[int]int64{}
	var renderers []int
	var total int64 // minor faults of all renderers since the last look
	for _, p := range child.Descendants(pid, 4) {
		cmd, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if err != nil {
			continue
		}
		if !bytes.Contains(cmd, []byte("--type=renderer")) {
			shared += anonBytes(p) // utility, GPU and zygote processes
			continue
		}
		// Pages' renderers only: not the browser's own user interface.
		if bytes.Contains(cmd, []byte("--top-chrome-webui")) {
			continue
		}
		renderers = append(renderers, p)
		f := minorFaults(p)
		faults[p] = f
		if prev, ok := w.faults[p]; ok && f > prev {
			total += f - prev
		}
	}
	grew := shared - w.shared
	if !w.started {
		w.started, grew = true, 0
	}
	switch {
	case grew > 0 && total > 0:
		for _, p := range renderers {
			if prev, ok := w.faults[p]; ok && faults[p] > prev {
				w.held[p] += grew * (faults[p] - prev) / total
			}
		}
	case grew < 0:
		var sum int64
		for _, h := range w.held {
			sum += h
		}
		if sum > 0 {
			shrink := min(-grew, sum)
			for p, h := range w.held {
				w.held[p] = h - shrink*h/sum
			}
		}
	}
	w.shared, w.faults = shared, faults
	for p := range w.held {
		if _, ok := faults[p]; !ok {
			delete(w.held, p) // ended: what it held is freed with it
		}
	}
	for _, p := range renderers {
		rss, held := residentBytes(p), w.held[p]
		if held < minHeld(limit) {
			held = 0
		}
		if rss+held <= limit {
			continue
		}
		if err := syscall.Kill(p, syscall.SIGKILL); err == nil {
			log.Warn("browser renderer killed: over the page memory limit", "pid", p, "rss_mib", rss>>20,
				"browser_held_mib", held>>20, "limit_mib", limit>>20)
		}
		delete(w.held, p)
	}
}

// residentBytes is a process's VmRSS, 0 when unknown.
func residentBytes(pid int) int64 { return statusBytes(pid, "VmRSS:") }

// anonBytes is a process's anonymous resident memory (RssAnon: not the
// files it maps, which the system shares and can drop), 0 when unknown.
func anonBytes(pid int) int64 { return statusBytes(pid, "RssAnon:") }

// statusBytes is the field key (in kB) of a process's /proc status, in
// bytes; 0 when unknown.
func statusBytes(pid int, key string) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// minorFaults is a process's count of minor page faults (field 10 of
// /proc/PID/stat), 0 when unknown.
func minorFaults(pid int) int64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 8 { // f[0] is field 3 (state); minflt is field 10
		return 0
	}
	n, _ := strconv.ParseInt(f[7], 10, 64)
	return n
}

// cpuTime is the CPU time a process has used (utime plus stime, fields
// 14 and 15 of /proc/PID/stat) in clock ticks, -1 when unknown: the
// health check tells a busy browser from a hung one by it.
func cpuTime(pid int) int64 {
	if pid <= 0 {
		return -1
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 { // f[0] is field 3 (state); utime is field 14
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return u + s
}
