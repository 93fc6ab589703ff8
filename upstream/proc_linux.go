package upstream

import "syscall"

// setDeathSignal kills the upstream when the server dies without stopping
// it.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
