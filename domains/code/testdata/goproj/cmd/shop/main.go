// Command shop prints an invoice.
package main

import (
	"fmt"

	"example.com/shop/billing"
	"example.com/shop/billing/tax"
)

func main() {
	items := []billing.Item{{Name: "pen", Price: 100, Weight: 10, Qty: 2}}
	fmt.Println(billing.CalcTotalsRow(items))
	fmt.Println("total:", billing.CalcTotal(items), "tax rate:", tax.Rate)
	// calcTotal in a comment, and "billing.CalcTotal" in a string:
	fmt.Println("see billing.CalcTotal")
}
