// Package tax adds value-added tax.
package tax

// Rate is the tax rate in percent.
const Rate = 20

// Add returns amount with Rate percent added.
func Add(amount int) int {
	return amount + amount*Rate/100
}
