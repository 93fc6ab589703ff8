package code

import "testing"

// TestRewritePyImports: every form of import of a moved module is
// rewritten; strings, comments and near-miss names are not.
func TestRewritePyImports(t *testing.T) {
	for _, c := range []struct {
		name, rel, newRel, src, want string
	}{
		{"from module import", "shop/invoice.py", "", "from shop.money import fmt_money\n", "from shop.util.money import fmt_money\n"},
		{"import qualified", "shop/render.py", "", "import shop.money\nx = shop.money.fmt_money(1)\ny = shop.moneybag.f\n",
			"import shop.util.money\nx = shop.util.money.fmt_money(1)\ny = shop.moneybag.f\n"},
		{"import as", "a.py", "", "import shop.money as m\nm.fmt_money(1)\n", "import shop.util.money as m\nm.fmt_money(1)\n"},
		{"from package import module", "tests/test_shop.py", "", "from shop import money\n", "from shop.util import money\n"},
		{"from package import module among names", "t.py", "", "from shop import invoice, money, render\n",
			"from shop import invoice, render\nfrom shop.util import money\n"},
		{"relative from a sibling", "shop/render.py", "", "from .money import fmt_money\n", "from shop.util.money import fmt_money\n"},
		{"relative from package", "shop/render.py", "", "from . import money\n", "from shop.util import money\n"},
		{"strings and comments stay", "shop/render.py", "",
			"HELP = \"\"\"import shop.money\nfrom shop.money import x\"\"\"\n# import shop.money\ns = 'shop.money'\n",
			"HELP = \"\"\"import shop.money\nfrom shop.money import x\"\"\"\n# import shop.money\ns = 'shop.money'\n"},
		{"the moved module's relative imports", "shop/money.py", "shop/util/money.py", "from .invoice import calc_total\nfrom . import render\n",
			"from shop.invoice import calc_total\nfrom shop import render\n"},
		{"parenthesised names", "t.py", "", "from shop.money import (\n    fmt_money,\n    parse,\n)\n", "from shop.util.money import (\n    fmt_money,\n    parse,\n)\n"},
		{"a submodule", "t.py", "", "import shop.money.sub\n", "import shop.util.money.sub\n"},
		{"another module", "t.py", "", "from shop.moneys import x\nimport shop.mone\n", "from shop.moneys import x\nimport shop.mone\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := rewritePyImports([]byte(c.src), c.rel, c.newRel, "shop.money", "shop.util.money")
			if string(got) != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
