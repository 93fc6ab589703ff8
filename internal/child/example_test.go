//go:build unix

package child_test

import (
	"fmt"
	"io"

	"github.com/manglecp/manglecp/internal/child"
)

func Example() {
	p, err := child.Start(child.Config{
		Command:    []string{"sh", "-c", "echo to stderr >&2; echo hello"},
		StderrLine: func(line string) { fmt.Println("stderr:", line) },
	})
	if err != nil {
		panic(err)
	}
	out, _ := io.ReadAll(p.Stdout) // ends when every writer is gone
	<-p.Done()
	p.Stop()
	fmt.Printf("stdout: %s", out)
	// Output:
	// stderr: to stderr
	// stdout: hello
}
