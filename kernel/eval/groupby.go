package eval

import (
	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/builtin"
	"codeberg.org/TauCeti/mangle-go/functional"
	"codeberg.org/TauCeti/mangle-go/symbols"
)

// GroupBy applies a do-transform to the rows of its rule's body as the
// engine's evalDo does (fn:group_by, then each reducer over a group's
// rows and each other function over the group's bindings), with two
// differences. Groups are told apart by their key constants: Mangle v0.5.0
// hashes a group's key to 32 bits and silently merges groups whose hashes
// collide, which is likely from about 65,000 groups on. And the groups are
// emitted in the order of their first rows instead of a map's order. A
// do-transform other than fn:group_by emits nothing, as in the engine.
func GroupBy(head ast.Atom, transform ast.Transform, rows []ast.ConstSubstList, emit func(ast.Atom) bool) error {
	do := transform.Statements[0]
	if do.Fn.Function.Symbol != symbols.GroupBy.Symbol {
		return nil
	}
	type group struct {
		key  []ast.Constant
		rows []ast.ConstSubstList
	}
	var groups []*group
	byHash := map[uint64][]*group{} // groups by their key's hash; equal hashes are compared by value
	for _, row := range rows {
		key := make([]ast.Constant, len(do.Fn.Args))
		h := uint64(14695981039346656037) // FNV-1a's offset basis, folding each constant's own hash
		for i, v := range do.Fn.Args {
			key[i] = row.Get(v.(ast.Variable)).(ast.Constant)
			h = (h ^ key[i].Hash()) * 1099511628211
		}
		var g *group
		for _, c := range byHash[h] {
			if sameKey(c.key, key) {
				g = c
				break
			}
		}
		if g == nil {
			g = &group{key: key}
			byHash[h] = append(byHash[h], g)
			groups = append(groups, g)
		}
		g.rows = append(g.rows, row)
	}
	for _, g := range groups {
		var subst ast.ConstSubstList
		for i, v := range g.key {
			subst = subst.Extend(do.Fn.Args[i].(ast.Variable), v)
		}
		for _, stmt := range transform.Statements[1:] {
			var c ast.Constant
			var err error
			if builtin.IsReducerFunction(stmt.Fn.Function) {
				c, err = functional.EvalReduceFn(stmt.Fn, g.rows)
			} else {
				c, err = functional.EvalApplyFn(stmt.Fn, subst)
			}
			if err != nil {
				return err
			}
			subst = subst.Extend(*stmt.Var, c)
		}
		emit(head.ApplySubst(subst).(ast.Atom))
	}
	return nil
}

// sameKey reports whether two group keys hold equal constants.
func sameKey(a, b []ast.Constant) bool {
	for i := range a {
		if !a[i].Equals(b[i]) {
			return false
		}
	}
	return true
}
