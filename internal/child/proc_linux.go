package child

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// setDeathSignal kills the child when the parent dies without stopping
// it.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// TreeRSS is the resident memory of the child and its descendants in
// bytes, read from /proc (statm's second field, in pages).
func (p *Process) TreeRSS() int64 {
	page := int64(os.Getpagesize())
	var total int64
	for _, pid := range append([]int{p.Pid()}, Descendants(p.Pid(), 8)...) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 1 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				total += n * page
			}
		}
	}
	return total
}

// maxDescendants bounds what Descendants lists.
const maxDescendants = 256

// Descendants lists the processes under pid, at most depth levels deep
// (and at most 256), from /proc's children files of every thread.
func Descendants(pid, depth int) []int {
	seen := map[int]bool{pid: true}
	var out []int
	var walk func(p, depth int)
	walk = func(p, depth int) {
		if depth == 0 {
			return
		}
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				c, err := strconv.Atoi(f)
				if err != nil || seen[c] || len(out) >= maxDescendants {
					continue
				}
				seen[c] = true
				out = append(out, c)
				walk(c, depth-1)
			}
		}
	}
	walk(pid, depth)
	return out
}
