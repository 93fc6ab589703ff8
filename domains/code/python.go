package code

// pyMovePlan moves a Python module or package with its imports updated.
func (c *Code) pyMovePlan(from, to loc, isDir bool) (*plan, string, error) {
	return nil, "", fail(CodeNotMovable, "move it with move", map[string]any{"path": c.show(from), "reason": "python moves are not built yet"}, "python moves are not built yet")
}
