//go:build !linux

package lsp

import "os"

func findProcess(pid int) (*os.Process, error) { return os.FindProcess(pid) }
