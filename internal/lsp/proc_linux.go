package lsp

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procAttr puts the server in its own process group, so that Close kills
// it with every child it started, and kills it should this process die.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group led by pid.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// treeRSS is the resident memory of pid and its descendants, read from
// /proc (statm's second field, in pages).
func treeRSS(pid int) int64 {
	page := int64(os.Getpagesize())
	var total int64
	seen := map[int]bool{}
	var walk func(p int, depth int)
	walk = func(p int, depth int) {
		if seen[p] || depth > 8 || len(seen) > 256 {
			return
		}
		seen[p] = true
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/statm"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 1 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				total += n * page
			}
		}
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil {
					walk(n, depth+1)
				}
			}
		}
	}
	walk(pid, 0)
	return total
}
