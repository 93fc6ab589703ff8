package code

import (
	"fmt"
	"reflect"
	"testing"
)

// TestGoUsesIn: the uses of a package-level symbol in a file gopls does
// not load are the identifiers that resolve to it through the file's
// imports or its package; strings, comments, near misses, selectors of
// other packages, local declarations and field names are not uses.
func TestGoUsesIn(t *testing.T) {
	billing := goSymbolPackage{dir: "billing", importPath: "example.com/shop/billing", name: "billing"}
	for _, c := range []struct {
		name, rel, src string
		member         bool
		want           []string // line:column (UTF-16, 1-based)
		unsure         []int
	}{
		{"import under the package's name", "scripts/a.go",
			"package main\nimport \"example.com/shop/billing\"\nvar _ = billing.CalcTotal(nil) // CalcTotal\nvar s = \"billing.CalcTotal\"\nvar _ = billing.CalcTotalWeight\n",
			false, []string{"3:17"}, nil},
		{"import under another name", "scripts/a.go",
			"package main\nimport bl \"example.com/shop/billing\"\nvar _ = bl.CalcTotal\n",
			false, []string{"3:12"}, nil},
		{"a local variable shadows the import", "scripts/a.go",
			"package main\nimport \"example.com/shop/billing\"\nfunc f() { billing := struct{ CalcTotal int }{}; _ = billing.CalcTotal }\nvar _ = billing.CalcTotal\n",
			false, []string{"4:17"}, nil},
		{"another package's selector", "scripts/a.go",
			"package main\nimport other \"example.com/other/billing\"\nvar _ = other.CalcTotal\n",
			false, nil, nil},
		{"dot import", "scripts/a.go",
			"package main\nimport . \"example.com/shop/billing\"\nvar _ = CalcTotal\n",
			false, []string{"3:9"}, nil},
		{"the package's own file", "billing/x_windows.go",
			"package billing\nfunc CalcTotal(items []Item) int { return 0 }\nfunc g() int { CalcTotal := 1; return CalcTotal }\nvar _ = struct{ CalcTotal int }{CalcTotal: CalcTotal(nil)}\n",
			false, []string{"2:6", "4:44"}, nil},
		{"another package in the same directory", "billing/x.go",
			"package main\nvar _ = CalcTotal\n",
			false, nil, nil},
		{"non-ASCII before the use", "scripts/a.go",
			"package main\nimport \"example.com/shop/billing\"\nvar _, _ = \"é😀\", billing.CalcTotal\n",
			false, []string{"3:27"}, nil},
		{"a member cannot be resolved: lines to check", "scripts/a.go",
			"package main\nfunc (r T) CalcTotal() {}\nvar _ = x.CalcTotal\nvar _ = T{CalcTotal: 1}\n// x.CalcTotal\n",
			true, nil, []int{2, 3, 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			uses, unsure := goUsesIn([]byte(c.src), c.rel, billing, "CalcTotal", c.member)
			var got []string
			for _, u := range uses {
				got = append(got, fmt.Sprintf("%d:%d", u.pos.Line+1, u.pos.Character+1))
			}
			if !reflect.DeepEqual(got, c.want) || !reflect.DeepEqual(unsure, c.unsure) {
				t.Errorf("uses %v unsure %v, want %v %v", got, unsure, c.want, c.unsure)
			}
		})
	}
}
