package load

import (
	"fmt"
	"regexp"
	"strings"
)

// parseErrors turns the parser's "line:col message" lines into LoadErrors
// worded for a rule author: ANTLR's token sets (`expecting {'.', '\u27F8',
// ...}`, `no viable alternative at input ...`) become what to write. Only
// the first error of each line is kept: the parser's recovery usually
// reports the same mistake again.
func parseErrors(file, src string, err error) LoadErrors {
	var out LoadErrors
	seen := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(err.Error()), "\n") {
		var l, c int
		if n, _ := fmt.Sscanf(line, "%d:%d", &l, &c); n == 2 {
			if seen[l] {
				continue
			}
			seen[l] = true
			msg := ""
			if i := strings.IndexByte(line, ' '); i >= 0 {
				msg = line[i+1:]
			}
			text := sourceLine(src, l)
			// A missing '.' shows on the next statement (or the end of the
			// file): blame the line that lacks it.
			if prev := previousLine(src, l); prev > 0 && (strings.HasSuffix(msg, "at '<EOF>'") || (c == 0 && strings.Contains(msg, "':-'"))) {
				if strings.HasSuffix(msg, "at '<EOF>'") || strings.TrimSpace(text[:min(c, len(text))]) == "" {
					msg = fmt.Sprintf("%s [next: line %d]", msg, l)
					l, text = prev, sourceLine(src, prev)
				}
			}
			out = append(out, &LoadError{File: file, Line: l, Message: "syntax error: " + explainSyntax(msg, text, c)})
			continue
		}
		out = append(out, &LoadError{File: file, Message: "syntax error: " + line})
	}
	return out
}

// previousLine returns the last line before line n that holds more than
// white space and comments, or 0.
func previousLine(src string, n int) int {
	for l := n - 1; l >= 1; l-- {
		text := sourceLine(src, l)
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		if strings.TrimSpace(text) != "" {
			return l
		}
	}
	return 0
}

func sourceLine(src string, n int) string {
	lines := strings.Split(src, "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

var (
	reMismatched = regexp.MustCompile(`^mismatched input '(.*)' expecting (.*)$`)
	reExtraneous = regexp.MustCompile(`^extraneous input '(.*)' expecting (.*)$`)
	reMissing    = regexp.MustCompile(`^missing '(.*)' at '(.*)'$`)
	reNoViable   = regexp.MustCompile(`^no viable alternative at input '(.*)'$`)
	reToken      = regexp.MustCompile(`^token recognition error at: '(.*)'$`)
	reNameAtEnd  = regexp.MustCompile(`/[A-Za-z0-9_./]*\.\s*(#.*)?$`)
	reNext       = regexp.MustCompile(` \[next: line (\d+)\]$`)
	reLowerArg   = regexp.MustCompile(`[(,]\s*([a-z][A-Za-z0-9_]*)\s*[),]`)
)

// tokenWords names the grammar's tokens as an author writes them.
var tokenWords = map[string]string{
	"'.'": "'.'", "':-'": "':-'", "'\\u27F8'": "", "'@'": "", "')'": "')'", "'('": "'('", "','": "','",
	"'['": "a list", "'{'": "a map", "NUMBER": "a number", "FLOAT": "", "VARIABLE": "a Variable",
	"NAME": "a /name", "DOT_TYPE": "", "CONSTANT": "", "STRING": "a \"string\"", "BYTESTRING": "",
	"'temporal'": "", "'descr'": "descr [...]", "'inclusion'": "", "'bound'": "bound [...]",
	"'|>'": "", "'!'": "", "<EOF>": "the end of the file", "']'": "']'",
}

// expected words an ANTLR expectation ("'.'" or "{'.', ':-', ...}").
func expected(set string) string {
	set = strings.TrimSuffix(strings.TrimPrefix(set, "{"), "}")
	var words []string
	for _, t := range strings.Split(set, ", ") {
		w, ok := tokenWords[t]
		if !ok {
			w = t
		}
		if w != "" {
			words = append(words, w)
		}
	}
	switch len(words) {
	case 0:
		return "something else"
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// shown quotes a token the parser met.
func shown(tok string) string {
	if tok == "<EOF>" {
		return "the end of the file"
	}
	return fmt.Sprintf("%q", tok)
}

// explainSyntax words one parser message; text is the source line and col
// the 0-based column the parser gives.
func explainSyntax(msg, text string, col int) string {
	trimmed := strings.TrimSpace(text)
	if m := reNext.FindStringSubmatch(msg); m != nil {
		msg = strings.TrimSuffix(msg, m[0])
		if strings.HasSuffix(msg, "at '<EOF>'") {
			if reNameAtEnd.MatchString(trimmed) {
				return "the last statement does not end with '.': a /name swallows a '.' right after it, so write a space before the '.' (/fix .)"
			}
			return "the last statement does not end with '.'"
		}
		tok := ""
		if mm := reMismatched.FindStringSubmatch(msg); mm != nil {
			tok = mm[1]
		}
		if reNameAtEnd.MatchString(trimmed) {
			return fmt.Sprintf("this statement does not end with '.' (line %s goes on with %q): a /name swallows a '.' right after it, so write a space before the '.' (/fix .)", m[1], tok)
		}
		return fmt.Sprintf("this statement does not end with '.' (line %s goes on with %q)", m[1], tok)
	}
	if m := reToken.FindStringSubmatch(msg); m != nil {
		switch {
		case strings.HasPrefix(m[1], "'"):
			return "a quoted string is not closed on this line"
		case strings.HasPrefix(m[1], ";"):
			return "';' is not Mangle: for \"or\", write a second rule with the same head"
		}
		return fmt.Sprintf("the character %q cannot appear here", m[1])
	}
	if m := reMissing.FindStringSubmatch(msg); m != nil {
		if m[1] == "." {
			if m[2] == "<EOF>" && reNameAtEnd.MatchString(trimmed) {
				return "the file ends without the '.' that ends the last statement: a /name swallows a '.' right after it, so write a space before it (/fix .)"
			}
			if m[2] == "<EOF>" {
				return "the file ends without the '.' that ends the last statement"
			}
			return fmt.Sprintf("'.' expected before %s: end each fact and rule with '.', and separate premises with ','", shown(m[2]))
		}
		return fmt.Sprintf("%s expected before %s", expected("'"+m[1]+"'"), shown(m[2]))
	}
	if m := reMismatched.FindStringSubmatch(msg); m != nil {
		return unexpected(m[1], m[2], text, col)
	}
	if m := reExtraneous.FindStringSubmatch(msg); m != nil {
		return unexpected(m[1], m[2], text, col)
	}
	if m := reNoViable.FindStringSubmatch(msg); m != nil {
		input := m[1]
		if a := reLowerArg.FindStringSubmatch(text); a != nil {
			return fmt.Sprintf("%q is not a term: write a variable with a capital letter (%s), a string in double quotes (%q) or a name with a slash (/%s)",
				a[1], strings.ToUpper(a[1][:1])+a[1][1:], a[1], a[1])
		}
		if strings.Contains(input, ":-") || strings.HasSuffix(input, ".") {
			return fmt.Sprintf("cannot read %q: a '(' is not closed before it, or an argument is missing between ','s", input)
		}
		return fmt.Sprintf("cannot read %q: check the parentheses, the ','s between arguments and the quotes before it", input)
	}
	return msg
}

// unexpected words a "mismatched" or "extraneous" input.
func unexpected(tok, set, text string, col int) string {
	want := expected(set)
	switch {
	case strings.HasPrefix(tok, "[-"):
		return "'[-' reads as an operator: write a space after '[' ([ -1, 2])"
	case tok == "=" && strings.Contains(text, "=="):
		return "'==' is not Mangle: write X = Y to compare for equality"
	case tok == "<-" || tok == ":" || tok == "<":
		return fmt.Sprintf("%s where %s should be: a rule's head and body are separated by ':-'", shown(tok), want)
	case strings.Contains(set, "':-'") && col == 0:
		return fmt.Sprintf("%s where %s should be: does the statement before it end with '.'?", shown(tok), want)
	case strings.Contains(set, "':-'") && tok == "(":
		return "a predicate name starts with a lower-case letter (Decl and variables start with a capital)"
	}
	return fmt.Sprintf("%s where %s should be", shown(tok), want)
}
