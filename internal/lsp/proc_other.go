//go:build !linux

package lsp

import "syscall"

// procAttr puts the server in its own process group where the system
// supports it.
func procAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the process pid (no process groups here).
func killGroup(pid int) {
	if p, err := findProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// treeRSS cannot be read here: the memory bound is then the server's own
// soft limit only.
func treeRSS(int) int64 { return 0 }
