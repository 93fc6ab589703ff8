//go:build unix && !linux

package upstream

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}
