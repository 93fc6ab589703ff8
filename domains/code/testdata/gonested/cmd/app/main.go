// Command app stores one entry.
package main

import (
	"fmt"

	"example.com/nest/pkg/store"
)

func main() {
	s := store.OpenStore() // "OpenStore" in a comment
	s.Put("k", "v")
	fmt.Println("OpenStore:", s != nil)
}
