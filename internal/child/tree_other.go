//go:build !linux

package child

// TreeRSS cannot be read here: it is 0.
func (p *Process) TreeRSS() int64 { return 0 }

// Descendants cannot be listed here: it is nil.
func Descendants(pid, depth int) []int { return nil }
