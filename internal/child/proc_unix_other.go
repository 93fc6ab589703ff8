//go:build unix && !linux

package child

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}
