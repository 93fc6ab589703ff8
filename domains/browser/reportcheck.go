package browser

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// checkReportDir reports, before the first report is written, why
// write_diagnosis_report could not write into dir: a path that is a
// symlink or not a directory, or a directory (or, while dir does not exist
// yet, the nearest existing parent it would be created in) where no file
// can be created, such as a read-only file system. It creates nothing that
// stays: a probe file is created and removed at once.
func checkReportDir(dir string) error {
	probeIn := dir
	fi, err := os.Lstat(dir)
	switch {
	case err == nil && (fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir()):
		return fmt.Errorf("the report directory %s is a symlink or not a directory", dir)
	case errors.Is(err, fs.ErrNotExist):
		// Created on the first write: its nearest existing parent must take it.
		for {
			parent := filepath.Dir(probeIn)
			if parent == probeIn {
				break
			}
			probeIn = parent
			if st, err := os.Stat(probeIn); err == nil {
				if !st.IsDir() {
					return fmt.Errorf("the report directory %s cannot be created: %s is not a directory", dir, probeIn)
				}
				break
			}
		}
	case err != nil:
		return fmt.Errorf("the report directory %s: %w", dir, unwrapPath(err))
	}
	f, err := os.CreateTemp(probeIn, ".manglecp-write-check-*")
	if err != nil {
		if probeIn != dir {
			return fmt.Errorf("the report directory %s cannot be created in %s: %w", dir, probeIn, unwrapPath(err))
		}
		return fmt.Errorf("the report directory %s is not writable: %w", dir, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// unwrapPath is the system error of a *fs.PathError (the path is named
// already).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// warnReportDir logs, at start-up, that reports cannot be written, naming
// the directory and what to do.
func warnReportDir(dir string, log *slog.Logger) {
	err := checkReportDir(dir)
	if err == nil {
		return
	}
	if log == nil {
		log = slog.Default()
	}
	log.Warn("write_diagnosis_report will fail: "+err.Error()+"; give the server a writable report directory (report_dir in the config file, or a writable volume)",
		"report_dir", dir)
}
