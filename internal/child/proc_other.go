//go:build !unix

package child

import "os/exec"

func setProcAttr(*exec.Cmd) {}

// signalGroup kills the command itself: there are no process groups here.
func signalGroup(cmd *exec.Cmd, _ bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
