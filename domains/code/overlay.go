package code

import (
	"errors"
	"io/fs"
	"sort"
)

// overlay is a read-only file system of several layered over each other:
// a file is read from the first that has it, and a directory lists the
// entries of all of them. It composes the workspace domain's rules with
// the code domain's (whose files are named code_*.mg, so none hides one
// of the workspace's).
type overlay []fs.FS

func (o overlay) Open(name string) (fs.File, error) {
	var firstErr error
	for _, f := range o {
		file, err := f.Open(name)
		if err == nil {
			return file, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return nil, firstErr
}

// ReadDir merges the directory's entries of every layer, sorted by name;
// the first layer's entry wins a name found twice.
func (o overlay) ReadDir(name string) ([]fs.DirEntry, error) {
	seen := map[string]bool{}
	var out []fs.DirEntry
	found := false
	for _, f := range o {
		entries, err := fs.ReadDir(f, name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		found = true
		for _, e := range entries {
			if !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, e)
			}
		}
	}
	if !found {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}
