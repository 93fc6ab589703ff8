package eval_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"

	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/kernel/eval"
	"github.com/manglecp/manglecp/kernel/internal/kerneltest"
	"github.com/manglecp/manglecp/protocol"
)

func engineGroupHash(c ast.Constant) uint32 {
	b := binary.LittleEndian.AppendUint64(nil, c.Hash())
	h := fnv.New32()
	h.Write(b)
	return h.Sum32()
}

func collidingKinds(t *testing.T) (string, string) {
	seen := map[uint32]string{}
	for i := range 1 << 22 {
		s := fmt.Sprintf("kind%d", i)
		h := engineGroupHash(ast.String(s))
		if other, ok := seen[h]; ok {
			return other, s
		}
		seen[h] = s
	}
	t.Fatal("no two colliding group keys among 4M strings")
	return "", ""
}

func TestGroupByKeepsCollidingGroupsApart(t *testing.T) {
	a, b := collidingKinds(t)
	p := kerneltest.FullPlan(mustLoad(t, kerneltest.ExecRules)) // count_kind feeds no answer (prune.go)
	item := func(name, kind string, size int) protocol.Fact {
		return protocol.Fact{Pred: "item", Args: []any{name, kind, json.Number(fmt.Sprint(size))}}
	}
	req := eval.Request{Intent: "probe", EvalTime: kerneltest.EvalTime, Caller: "anonymous", Permissions: kerneltest.Anyone, MaxFactsCreated: 10000,
		Facts: []protocol.Fact{item("n1", a, 1), item("n2", a, 2), item("n3", b, 3)}}
	facts, err := p.StoreFacts(req, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range facts {
		if strings.HasPrefix(f, "count_kind(") {
			got = append(got, f)
		}
	}
	want := []string{fmt.Sprintf("count_kind(%q,2)", a), fmt.Sprintf("count_kind(%q,1)", b)}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("count_kind = %v, want %v (%s and %s collide in 32 bits)", got, want, a, b)
	}
}

func TestGroupByOrder(t *testing.T) {
	k, n := ast.Variable{Symbol: "K"}, ast.Variable{Symbol: "N"}
	head := ast.NewAtom("count", k, n)
	transform := ast.Transform{Statements: []ast.TransformStmt{
		{Fn: ast.ApplyFn{Function: ast.FunctionSym{Symbol: "fn:group_by", Arity: -1}, Args: []ast.BaseTerm{k}}},
		{Var: &n, Fn: ast.ApplyFn{Function: ast.FunctionSym{Symbol: "fn:count", Arity: 0}}},
	}}
	var rows []ast.ConstSubstList
	for _, s := range []string{"z", "a", "z", "m", "a", "z"} {
		rows = append(rows, ast.ConstSubstList{}.Extend(k, ast.String(s)))
	}
	var got []string
	if err := eval.GroupBy(head, transform, rows, func(a ast.Atom) bool { got = append(got, a.String()); return true }); err != nil {
		t.Fatal(err)
	}
	want := []string{`count("z",3)`, `count("a",2)`, `count("m",1)`}
	if !slices.Equal(got, want) {
		t.Errorf("groupBy emitted %v, want %v", got, want)
	}
}
