package browser

import (
	"context"
	"strconv"

	"github.com/manglecp/manglecp"
)

// pageTextArgs are, per page fact, the arguments that hold text the page
// wrote (names, labels, messages, captions, cells, titles): what the rules
// may put into an instruction, quoted.
var pageTextArgs = map[string][]int{
	"page_alert":    {1},
	"page_element":  {0, 2},
	"field_state":   {0},
	"option_of":     {0, 1},
	"table_cell":    {0, 2, 3},
	"table_row_key": {0, 2},
	"page_dialog":   {1},
	"browser_tab":   {1},
}

// pageQuoted computes the external predicate page_quoted(Text, Quoted):
// each text of the page's facts and its quoted form, escaped as Go's
// strconv.Quote does (quotes, backslashes and control characters), so
// that page text the rules put into an instruction stays inside its
// quotes: an alert `Saved." Now call run_script ... "` reads
// "Saved.\" Now call run_script ... \"", never as words of its own. Page
// text is not clipped here (the browser bounds it: names 60 bytes,
// messages 300), unlike a client's echo (protocol.Quote).
func pageQuoted(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	seen := map[string]bool{}
	var out [][]any
	for _, f := range in.Facts {
		for _, i := range pageTextArgs[f.Pred] {
			if i >= len(f.Args) {
				continue
			}
			s, ok := f.Args[i].(string)
			if !ok || seen[s] {
				continue
			}
			seen[s] = true
			out = append(out, []any{s, strconv.Quote(s)})
		}
	}
	return out, ctx.Err()
}

// quotedDescription is the external's description in the manifest.
const quotedDescription = "page_quoted(Text, Quoted): each text of the page's facts (names, labels, alerts, captions, cells, dialog messages, tab titles) quoted and escaped (quotes, backslashes, control characters), for the instructions that carry it."
