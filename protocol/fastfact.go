package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// The fast path of decoding. Facts of the common shapes are decoded by a
// byte scan instead of encoding/json (which decodes each fact into a map
// of raw fields, then each field with a decoder of its own). The scan
// only ever answers success, with exactly the values encoding/json would
// give; for anything else (an error, an unusual shape) it reports false
// and the caller takes the encoding/json path, which words every error as
// before. TestDecodeFactFastMatchesSlow and FuzzDecodeFactFast hold the two
// paths to the same answers.

// decodeFactFast decodes raw, which must be valid JSON, into f when it is
// a fact object whose keys are among "pred", "args", "category" and "t"
// (no escapes in the keys), with "pred" and "category" strings (or null
// for category), "args" an array of strings, numbers, booleans and nulls
// (or null), and "t" an object of "at", "start" and "end" holding such
// scalars (or null). It reports false, leaving f unchanged, otherwise.
func decodeFactFast(raw []byte, f *Fact) bool { return decodeFactArena(raw, f, nil) }

// factArena hands out the argument lists and argument text of many facts
// from shared chunks, so a list of facts costs a few allocations for them
// rather than two per fact. Each fact's arguments are a full slice of their
// own (appending to one copies it); text is never written twice (a
// strings.Builder only appends, and a full one is replaced).
type factArena struct {
	args  []any
	text  strings.Builder
	chunk int // items per new args chunk
	left  int // bytes of the facts not decoded yet (the caller counts them down): a bound on their text
	// recent are the last arguments of a few predicates, by position: a
	// list of facts repeats many (a session id, a level, a method), and
	// an argument with the same text and kind as the last one of its
	// predicate at its position shares its value instead of allocating.
	recent     [recentPreds]recentArgs
	nextRecent int        // the entry of recent to replace next
	items      []scanItem // scanArrayItems's scratch
}

// recentArgs is the last scalar arguments of a predicate, by position.
type recentArgs struct {
	pred  string
	named bool                // pred is a valid predicate name: its JSON text is its bytes
	text  [recentArity]string // the argument's text in the JSON (a plain string's without its quotes)
	kind  [recentArity]uint8  // 0 none, 1 plain string, 2 number
	val   [recentArity]any
}

// How many predicates and argument positions recent remembers.
const (
	recentPreds = 4
	recentArity = 8
)

// recentOf returns the recent arguments of pred, taking over the oldest
// entry for a predicate not among them; nil without an arena or a
// predicate.
func (a *factArena) recentOf(pred string) *recentArgs {
	if a == nil || pred == "" {
		return nil
	}
	for i := range a.recent {
		if a.recent[i].pred == pred {
			return &a.recent[i]
		}
	}
	r := &a.recent[a.nextRecent]
	a.nextRecent = (a.nextRecent + 1) % recentPreds
	*r = recentArgs{pred: pred, named: validPredicateName(pred)}
	return r
}

// The arena's chunks: text chunks of textChunk bytes (text longer than a
// quarter of it gets its own string) and argument chunks of at most
// argsChunk items. Lists of fewer than arenaFacts facts get no arena:
// there is little to share, and a chunk would outweigh them.
const (
	textChunk  = 8192
	argsChunk  = 4096
	arenaFacts = 64
	argBytes   = 16
)

// newFactArena returns an arena for decoding raws, or nil (allocate per
// fact) for a short list.
func newFactArena(raws []json.RawMessage) *factArena {
	if len(raws) < arenaFacts {
		return nil
	}
	a := &factArena{chunk: min(len(raws)*6, argsChunk)}
	for _, r := range raws {
		a.left += len(r)
	}
	return a
}

// argList returns an empty list with room for n arguments.
func (a *factArena) argList(n int) []any {
	if a == nil {
		return make([]any, 0, n)
	}
	if cap(a.args)-len(a.args) < n {
		// Room for the rest of the facts (about one argument per argBytes
		// of their JSON), at most a chunk.
		a.args = make([]any, 0, max(n, min(a.chunk, a.left/argBytes)))
	}
	start := len(a.args)
	a.args = a.args[:start+n]
	return a.args[start : start : start+n]
}

// builder returns the arena's text builder with room for total more
// bytes (at most textChunk/4), and where in it they start.
func (a *factArena) builder(total int) (*strings.Builder, int) {
	if a.text.Cap()-a.text.Len() < total {
		a.text = strings.Builder{}
		a.text.Grow(max(total, min(textChunk, a.left)))
	}
	return &a.text, a.text.Len()
}

// predicate reads the fact's predicate, the JSON string at raw[i]. A list
// of facts repeats a few predicates: one that is the same valid name as a
// recent one shares that one's string instead of allocating its own.
func (a *factArena) predicate(raw []byte, i int) (string, int, bool) {
	if a != nil && i < len(raw) && raw[i] == '"' {
		for k := range a.recent {
			r := &a.recent[k]
			if end := i + 1 + len(r.pred); r.named && end < len(raw) && raw[end] == '"' && string(raw[i+1:end]) == r.pred {
				return r.pred, end + 1, true
			}
		}
	}
	return scanString(raw, i)
}

// decodeFactArena is decodeFactFast with the arena's chunks and recent
// values (nil: none). With an arena, arguments that come before the
// predicate (encoders that sort keys write "args" first) are scanned where
// they are and given their values once the predicate is known, so they can
// share its recent values.
func decodeFactArena(raw []byte, f *Fact, arena *factArena) bool {
	var out Fact
	var deferred []scanItem // the items of "args", when given values after the loop
	isDeferred := false
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		i++
	} else {
		for {
			key, next, ok := plainKey(raw, i)
			if !ok {
				return false
			}
			i = skipWS(raw, next)
			switch key {
			case "pred":
				s, n, ok := arena.predicate(raw, i)
				if !ok {
					return false
				}
				out.Pred, i = s, n
			case "category":
				if n, ok := scanNull(raw, i); ok {
					out.Category, i = "", n
					break
				}
				s, n, ok := scanString(raw, i)
				if !ok {
					return false
				}
				out.Category, i = s, n
			case "args":
				isDeferred = false // the last "args" counts
				if n, ok := scanNull(raw, i); ok {
					out.Args, out.hasArgs, i = nil, false, n
					break
				}
				if arena != nil && out.Pred == "" {
					items, n, ok := scanArrayItems(raw, i, arena)
					if !ok {
						return false
					}
					deferred, isDeferred, i = items, true, n
					break
				}
				args, n, ok := scanScalarArray(raw, i, arena, arena.recentOf(out.Pred))
				if !ok {
					return false
				}
				out.Args, out.hasArgs, i = args, true, n
			case "t":
				if n, ok := scanNull(raw, i); ok {
					out.T, i = nil, n
					break
				}
				t, n, ok := scanTemporal(raw, i)
				if !ok {
					return false
				}
				out.T, i = t, n
			default:
				return false
			}
			var done bool
			if i, done, ok = afterItem(raw, i, '}'); !ok {
				return false
			}
			if done {
				break
			}
		}
	}
	if skipWS(raw, i) != len(raw) {
		return false
	}
	if isDeferred {
		out.Args, out.hasArgs = arrayValues(raw, deferred, arena, arena.recentOf(out.Pred)), true
	}
	*f = out
	return true
}

// scanTemporal reads a "t" object of scalar bounds at raw[i].
func scanTemporal(raw []byte, i int) (*Temporal, int, bool) {
	if i >= len(raw) || raw[i] != '{' {
		return nil, 0, false
	}
	t := &Temporal{}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return t, i + 1, true
	}
	for {
		key, next, ok := plainKey(raw, i)
		if !ok {
			return nil, 0, false
		}
		v, n, ok := scanScalar(raw, skipWS(raw, next))
		if !ok {
			return nil, 0, false
		}
		if !t.set(key, v) {
			return nil, 0, false
		}
		next, done, ok := afterItem(raw, n, '}')
		if !ok {
			return nil, 0, false
		}
		if done {
			return t, next, true
		}
		i = next
	}
}

// scanScalarArray reads an array of scalars at raw[i] as a decoder with
// UseNumber gives it into a []any (never nil): scanArrayItems, then
// arrayValues.
func scanScalarArray(raw []byte, i int, arena *factArena, recent *recentArgs) ([]any, int, bool) {
	items, n, ok := scanArrayItems(raw, i, arena)
	if !ok {
		return nil, 0, false
	}
	return arrayValues(raw, items, arena, recent), n, true
}

// scanArrayItems reads the items of an array of scalars at raw[i]: plain
// strings and numbers as spans of raw, anything else as its value. With an
// arena the list is the arena's scratch, good until its next call. It
// returns the index after the array.
func scanArrayItems(raw []byte, i int, arena *factArena) ([]scanItem, int, bool) {
	if i >= len(raw) || raw[i] != '[' {
		return nil, 0, false
	}
	var items []scanItem
	if arena != nil {
		items = arena.items[:0] // the arena's scratch: no zeroing per array
		defer func() { arena.items = items[:0] }()
	} else {
		items = make([]scanItem, 0, 8)
	}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return items, i + 1, true
	}
	for {
		if i >= len(raw) {
			return nil, 0, false
		}
		var it scanItem
		switch c := raw[i]; {
		case c == '"':
			if n, plain := plainString(raw, i); plain {
				it, i = scanItem{start: i + 1, end: n - 1, kind: 1}, n
				break
			}
			s, n, ok := scanString(raw, i)
			if !ok {
				return nil, 0, false
			}
			it.v, i = s, n
		case c == '-' || (c >= '0' && c <= '9'):
			n, ok := scanNumber(raw, i)
			if !ok {
				return nil, 0, false
			}
			it, i = scanItem{start: i, end: n, kind: 2}, n
		default:
			v, n, ok := scanScalar(raw, i)
			if !ok {
				return nil, 0, false
			}
			it.v, i = v, n
		}
		items = append(items, it)
		var done, ok bool
		if i, done, ok = afterItem(raw, i, ']'); !ok {
			return nil, 0, false
		}
		if done {
			return items, i, true
		}
	}
}

// arrayValues gives the items scanArrayItems read of raw as their values.
// The text of the plain strings and numbers is copied into one string,
// which they share, and with an arena the list and the text come from its
// chunks: an array costs one allocation per string or number it holds
// (the decoder's: two, and four more), except one equal to the last
// argument at its position in recent (when not nil), whose value it
// shares. It records the array's values in recent.
func arrayValues(raw []byte, items []scanItem, arena *factArena, recent *recentArgs) []any {
	if len(items) == 0 {
		return []any{}
	}
	text := 0
	for k := range items {
		it := &items[k]
		if it.kind != 1 && it.kind != 2 {
			continue
		}
		if recent != nil && k < recentArity && recent.kind[k] == it.kind && recent.text[k] == string(raw[it.start:it.end]) {
			it.v, it.kind = recent.val[k], 3
		} else {
			text += it.end - it.start
		}
	}
	var own strings.Builder
	sb, at := &own, 0
	if arena != nil && text <= textChunk/4 {
		sb, at = arena.builder(text)
	} else {
		own.Grow(text)
	}
	for _, it := range items {
		if it.kind == 1 || it.kind == 2 {
			sb.Write(raw[it.start:it.end])
		}
	}
	all := sb.String()
	out := arena.argList(len(items))[:len(items)]
	for k, it := range items {
		switch it.kind {
		case 0, 3:
			out[k] = it.v
			continue
		case 1:
			out[k] = all[at : at+it.end-it.start]
		case 2:
			out[k] = json.Number(all[at : at+it.end-it.start])
		}
		if recent != nil && k < recentArity {
			recent.text[k], recent.kind[k], recent.val[k] = all[at:at+it.end-it.start], it.kind, out[k]
		}
		at += it.end - it.start
	}
	return out
}

// scanItem is an item of a scalar array as scanScalarArray first reads
// it: a value, or the span of a plain string's or a number's text.
type scanItem struct {
	v          any
	start, end int
	kind       uint8 // 0 v, 1 plain string, 2 number, 3 v shared from recent
}

// plainString reports whether the JSON string at raw[i] has no escapes,
// no control characters and is valid UTF-8 (its text is then its bytes),
// and returns the index after it.
func plainString(raw []byte, i int) (int, bool) {
	j := i + 1
	ascii := true
	for j < len(raw) {
		c := raw[j]
		if c == '"' {
			break
		}
		if c < 0x20 || c == '\\' {
			return 0, false
		}
		ascii = ascii && c < utf8.RuneSelf
		j++
	}
	if j >= len(raw) || !ascii && !utf8.Valid(raw[i+1:j]) {
		return 0, false
	}
	return j + 1, true
}

// scanScalar reads a string, number, boolean or null at raw[i] as a
// decoder with UseNumber gives it into an any.
func scanScalar(raw []byte, i int) (any, int, bool) {
	if i >= len(raw) {
		return nil, 0, false
	}
	switch c := raw[i]; {
	case c == '"':
		s, n, ok := scanString(raw, i)
		if !ok {
			return nil, 0, false
		}
		return s, n, true
	case c == '-' || (c >= '0' && c <= '9'):
		j, ok := scanNumber(raw, i)
		if !ok {
			return nil, 0, false
		}
		return json.Number(raw[i:j]), j, true
	case c == 't' && bytes.HasPrefix(raw[i:], []byte("true")):
		return true, i + 4, true
	case c == 'f' && bytes.HasPrefix(raw[i:], []byte("false")):
		return false, i + 5, true
	case c == 'n' && bytes.HasPrefix(raw[i:], []byte("null")):
		return nil, i + 4, true
	}
	return nil, 0, false
}

// scanNumber reads a JSON number at raw[i] by the grammar of RFC 8259
// (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?) and returns the index
// after it.
func scanNumber(raw []byte, i int) (int, bool) {
	digits := func(j int) int {
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
		}
		return j
	}
	if i < len(raw) && raw[i] == '-' {
		i++
	}
	switch {
	case i < len(raw) && raw[i] == '0':
		i++
	case i < len(raw) && raw[i] >= '1' && raw[i] <= '9':
		i = digits(i + 1)
	default:
		return 0, false
	}
	if i < len(raw) && raw[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

// scanNull reads a null at raw[i].
func scanNull(raw []byte, i int) (int, bool) {
	if bytes.HasPrefix(raw[i:], []byte("null")) {
		return i + 4, true
	}
	return 0, false
}

// scanString reads the JSON string at raw[i] as encoding/json decodes it.
// A string with escapes or invalid UTF-8 (which the decoder replaces) is
// decoded by encoding/json itself.
func scanString(raw []byte, i int) (string, int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return "", 0, false
	}
	escaped := false
	j := i + 1
	for ; j < len(raw); j++ {
		c := raw[j]
		if c == '"' {
			break
		}
		if c < 0x20 {
			return "", 0, false // invalid JSON: the decoder words the error
		}
		if c == '\\' {
			escaped = true
			j++
		}
	}
	if j >= len(raw) {
		return "", 0, false
	}
	body := raw[i+1 : j]
	if !escaped && utf8.Valid(body) {
		return string(body), j + 1, true
	}
	var s string
	if json.Unmarshal(raw[i:j+1], &s) != nil {
		return "", 0, false
	}
	return s, j + 1, true
}

// plainKey reads an object key without escapes at raw[i] and the colon
// after it, returning the key and the index after the colon.
func plainKey(raw []byte, i int) (string, int, bool) {
	key, colon, ok := rawKey(raw, i)
	if !ok {
		return "", 0, false
	}
	for _, c := range key {
		if c < 0x20 {
			return "", 0, false
		}
	}
	return knownKey(key), colon + 1, true
}

// memberKey reads an object key without escapes and in valid UTF-8 at
// raw[i] and the colon after it, returning the key (a copy only when it is
// not a known name) and the index of the value after them.
func memberKey(raw []byte, i int) (string, int, bool) {
	key, colon, ok := rawKey(raw, i)
	if !ok || !utf8.Valid(key) {
		return "", 0, false
	}
	k := knownKey(key)
	if k == "\x00" {
		k = string(key)
	}
	return k, skipWS(raw, colon+1), true
}

// rawKey finds the object key at raw[i], which must have no escapes, and
// the colon after it: the key's bytes and the colon's index.
func rawKey(raw []byte, i int) ([]byte, int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return nil, 0, false
	}
	end := bytes.IndexByte(raw[i+1:], '"')
	if end < 0 {
		return nil, 0, false
	}
	key := raw[i+1 : i+1+end]
	if bytes.IndexByte(key, '\\') >= 0 {
		return nil, 0, false
	}
	j := skipWS(raw, i+2+end)
	if j >= len(raw) || raw[j] != ':' {
		return nil, 0, false
	}
	return key, j, true
}

// knownKey returns key as one of the constant strings the fast paths
// compare against, without allocating, or "\x00" for any other key.
func knownKey(key []byte) string {
	switch string(key) {
	case "pred":
		return "pred"
	case "args":
		return "args"
	case "category":
		return "category"
	case "t":
		return "t"
	case "at":
		return "at"
	case "start":
		return "start"
	case "end":
		return "end"
	case "facts":
		return "facts"
	}
	return "\x00"
}

// skipWS returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipWS(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	return i
}

// skipValue returns the index after the JSON value at raw[i], which must
// be valid JSON, or false when raw ends first.
func skipValue(raw []byte, i int) (int, bool) {
	if i >= len(raw) {
		return 0, false
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for ; i < len(raw); i++ {
			switch raw[i] {
			case '"':
				n, ok := skipString(raw, i)
				if !ok {
					return 0, false
				}
				i = n - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for j < len(raw) && raw[j] != ',' && raw[j] != '}' && raw[j] != ']' && !isSpace(raw[j]) {
		j++
	}
	return j, j > i
}

// skipString returns the index after the JSON string at raw[i].
func skipString(raw []byte, i int) (int, bool) {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '"':
			return j + 1, true
		case '\\':
			j++
		}
	}
	return 0, false
}

// objectMembers calls fn with each key and raw value of the JSON object at
// the start of raw, which must be valid JSON, in document order. It
// reports false, having stopped, when raw is not an object, when a key has
// escapes or invalid UTF-8 (the caller's decoder unescapes or replaces
// those) or when fn returns false. Values are slices of raw without the
// whitespace around them. When split is not nil, it is called instead of
// skipping the value of a key it wants (want reports which), and returns
// the index after the value.
func objectMembers(raw []byte, fn func(key []byte, value []byte, start int) bool) bool {
	return objectMembersSplit(raw, nil, nil, fn)
}

func objectMembersSplit(raw []byte, want func(key []byte) bool, split func(raw []byte, i int) (int, bool), fn func(key []byte, value []byte, start int) bool) bool {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return true
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return false
		}
		end := bytes.IndexByte(raw[i+1:], '"')
		if end < 0 {
			return false
		}
		key := raw[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			return false // the decoder unescapes or replaces
		}
		i = skipWS(raw, i+2+end)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = skipWS(raw, i+1)
		var n int
		var ok bool
		if want != nil && want(key) {
			n, ok = split(raw, i)
		} else {
			n, ok = skipValue(raw, i)
		}
		if !ok || !fn(key, raw[i:n], i) {
			return false
		}
		next, done, ok := afterItem(raw, n, '}')
		if !ok || done {
			return ok
		}
		i = next
	}
}

// arrayItems reads the JSON array at raw[i] (valid JSON) and returns its
// items as slices of raw without the whitespace around them, as a decoder
// gives them into []json.RawMessage, and the index after the array. The
// items go into into's array when it has room for them (as a decoder
// reuses a slice's array).
func arrayItems(into []json.RawMessage, raw []byte, i int) ([]json.RawMessage, int, bool) {
	if i >= len(raw) || raw[i] != '[' {
		return nil, 0, false
	}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		if into == nil {
			return []json.RawMessage{}, i + 1, true
		}
		return into[:0], i + 1, true
	}
	// Room for items of 64 bytes: one allocation for a typical list of
	// facts, at most 3/8 of the list's own size.
	items := into[:0]
	if room := 16 + (len(raw)-i)/64; cap(items) < room {
		items = make([]json.RawMessage, 0, room)
	}
	for {
		n, ok := skipValue(raw, i)
		if !ok {
			return nil, 0, false
		}
		items = append(items, raw[i:n:n])
		next, done, ok := afterItem(raw, n, ']')
		if !ok {
			return nil, 0, false
		}
		if done {
			return items, next, true
		}
		i = next
	}
}

// afterItem reads what follows an object member or an array item ending
// at raw[i]: the closing byte (done; next is after it) or a comma (next is
// where the following item starts).
func afterItem(raw []byte, i int, closing byte) (next int, done, ok bool) {
	i = skipWS(raw, i)
	switch {
	case i >= len(raw):
		return 0, false, false
	case raw[i] == closing:
		return i + 1, true, true
	case raw[i] != ',':
		return 0, false, false
	}
	return skipWS(raw, i+1), false, true
}
