// Package billing adds up invoices.
package billing

import (
	"fmt"

	"example.com/shop/billing/tax"
)

// Item is a line of an invoice.
type Item struct {
	Name   string
	Price  int // cents
	Weight int // grams
	Qty    int
}

// CalcTotal is the sum of the items' prices times their quantities, with tax.
func CalcTotal(items []Item) int {
	sum := 0
	for _, it := range items {
		sum += it.Price * it.Qty
	}
	return tax.Add(sum)
}

// CalcTotalWeight is the weight of the items in grams.
func CalcTotalWeight(items []Item) int {
	w := 0
	for _, it := range items {
		w += it.Weight * it.Qty
	}
	return w
}

// CalcTotalsRow is the summary line of an invoice.
func CalcTotalsRow(items []Item) string {
	// The label below names CalcTotal on purpose: it must stay as it is.
	return fmt.Sprintf("CalcTotal: %d, weight: %d", CalcTotal(items), CalcTotalWeight(items))
}
