package words_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/manglecp/manglecp/internal/words"
)

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		s, old string
		whole  bool
		want   []int
	}{
		{"calc_total(calc_total_weight) calc_total", "calc_total", true, []int{0, 30}},
		{"calc_total(calc_total_weight) calc_total", "calc_total", false, []int{0, 11, 30}},
		{"zcalc_total é_x xé", "x", true, nil},
		{"a.b a.b", ".b", true, []int{1, 5}},
		{"// widget helper", "// widget helper", true, []int{0}},
		{"aaaa", "aa", false, []int{0, 2}},
		{"abc", "", false, nil},
		{"日本語 本", "本", true, []int{10}},
	} {
		if got := words.Find(tc.s, tc.old, tc.whole); !slices.Equal(got, tc.want) {
			t.Errorf("Find(%q, %q, %v) = %v, want %v", tc.s, tc.old, tc.whole, got, tc.want)
		}
	}
}

func ExampleFind() {
	fmt.Println(words.Find("calc_total(x) + calc_total_weight(x)", "calc_total", true))
	// Output: [0]
}
