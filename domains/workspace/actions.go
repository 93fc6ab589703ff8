package workspace

import (
	"encoding/json"
	"strconv"
)

type actions struct {
	w *Workspace
}

// at resolves the path argument name.
func (a *actions) at(args map[string]any, name string) (loc, error) {
	p, _ := args[name].(string)
	return a.w.resolve(p)
}

func argString(args map[string]any, name string) string {
	s, _ := args[name].(string)
	return s
}

// argOr is a string argument, or def when it is missing or empty.
func argOr(args map[string]any, name, def string) string {
	if s := argString(args, name); s != "" {
		return s
	}
	return def
}

func argInt(args map[string]any, name string) (int64, bool) {
	switch v := args[name].(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(string(v), 64)
			if ferr != nil {
				return 0, false
			}
			i = int64(f)
		}
		return i, true
	case int:
		return int64(v), true
	case int64:
		return v, true
	case float64:
		return int64(v), true
	}
	return 0, false
}
