//go:build unix

package child

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the command in its own process group, so stopping it
// also stops what it started (npx starts node, a language server its
// workers).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends SIGTERM (or SIGKILL) to the command's process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process == nil {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
