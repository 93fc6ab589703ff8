package billing

import "testing"

func TestCalcTotal(t *testing.T) {
	items := []Item{{Name: "pen", Price: 100, Weight: 10, Qty: 2}, {Name: "pad", Price: 250, Weight: 80, Qty: 1}}
	if got := CalcTotal(items); got != 540 {
		t.Errorf("CalcTotal = %d, want 540", got)
	}
	if got := CalcTotalWeight(items); got != 100 {
		t.Errorf("CalcTotalWeight = %d, want 100", got)
	}
	if got := CalcTotalsRow(items); got != "CalcTotal: 540, weight: 100" {
		t.Errorf("CalcTotalsRow = %q", got)
	}
}
