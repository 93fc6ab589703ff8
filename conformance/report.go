package conformance

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/manglecp/manglecp/protocol"
)

// Status is the outcome of one check.
type Status string

// The outcomes of a check.
const (
	// Pass: the server did what the spec section requires.
	Pass Status = "PASS"
	// Fail: the server answered, and the answer breaks the requirement.
	Fail Status = "FAIL"
	// Skip: the check could not run here (another transport, a higher
	// level, no fixture, auth off, ...); Detail says why.
	Skip Status = "SKIP"
)

// Check is the result of one conformance check.
type Check struct {
	// ID names the check, "category.name" (for example
	// "errors.http_status"); IDs are stable across versions of the suite.
	ID string `json:"id"`
	// Category is one of the eight categories of Spec 10 section 6.1:
	// manifest, facts, evaluation, macro-tools, invocation, errors,
	// security, transport.
	Category string `json:"category"`
	// Spec is the section the check proves, e.g. "Spec 09 3.1".
	Spec string `json:"spec"`
	// Level is the conformance level (Spec 10 section 2) that requires it.
	Level int `json:"level"`
	// Title says in one line what is checked.
	Title string `json:"title"`
	// Status is PASS, FAIL or SKIP.
	Status Status `json:"status"`
	// Detail explains a FAIL or SKIP (and sometimes a PASS).
	Detail string `json:"detail,omitempty"`
}

// Summary counts the checks of a report by status.
type Summary struct {
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Skip  int `json:"skip"`
	Total int `json:"total"`
}

// Report is the outcome of [Run]: every check in catalogue order, and a
// summary. Its JSON form (see [Report.JSON]) is stable.
type Report struct {
	// Target is the target the suite ran against.
	Target string `json:"target"`
	// Transport is "http", "websocket" or "stdio".
	Transport string `json:"transport"`
	// Server is the manifest's server_name and server_version.
	Server string `json:"server,omitempty"`
	// Protocol is the suite's protocol version (2026-02-draft).
	Protocol string `json:"protocol"`
	// DeclaredLevel is the manifest's protocol.conformance_level (0 when
	// missing or invalid).
	DeclaredLevel int `json:"declared_level"`
	// Level is the level the suite checked: checks of higher levels SKIP.
	Level int `json:"level"`
	// Fixture names the fixture used, "" for none.
	Fixture string `json:"fixture,omitempty"`
	// DurationMS is how long the run took.
	DurationMS int64 `json:"duration_ms"`
	// Checks are the results, in catalogue order.
	Checks []Check `json:"checks"`
	// Summary counts Checks.
	Summary Summary `json:"summary"`
}

// OK reports whether no check failed.
func (r *Report) OK() bool { return r.Summary.Fail == 0 }

// Failed returns the checks that failed.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == Fail {
			out = append(out, c)
		}
	}
	return out
}

// Check returns the result of the check id, or nil when the report has
// no such check.
func (r *Report) Check(id string) *Check {
	for i := range r.Checks {
		if r.Checks[i].ID == id {
			return &r.Checks[i]
		}
	}
	return nil
}

// summarize recomputes Summary from Checks.
func (r *Report) summarize() {
	s := Summary{Total: len(r.Checks)}
	for _, c := range r.Checks {
		switch c.Status {
		case Pass:
			s.Pass++
		case Fail:
			s.Fail++
		case Skip:
			s.Skip++
		}
	}
	r.Summary = s
}

// JSON returns the report as indented JSON.
func (r *Report) JSON() ([]byte, error) {
	return json.MarshalIndent(r, "", "  ")
}

// Format returns the report for people: a header, one line per check with
// its status, ID, spec section and level (and the detail of failed and
// skipped checks), then the summary.
func (r *Report) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "MangleCP conformance (protocol %s) against %s over %s\n", r.Protocol, r.Target, r.Transport)
	if r.Server != "" {
		fmt.Fprintf(&b, "server: %s, declared level %d, checked at level %d", r.Server, r.DeclaredLevel, r.Level)
	} else {
		fmt.Fprintf(&b, "declared level %d, checked at level %d", r.DeclaredLevel, r.Level)
	}
	if r.Fixture != "" {
		fmt.Fprintf(&b, ", fixture %s", r.Fixture)
	} else {
		b.WriteString(", no fixture")
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range r.Checks {
		line := fmt.Sprintf("%s\t%s\t%s\tL%d\t%s", c.Status, c.ID, c.Spec, c.Level, c.Title)
		fmt.Fprintln(tw, line)
		if c.Detail != "" && c.Status != Pass {
			fmt.Fprintf(tw, "\t\t\t\t  %s\n", oneLine(c.Detail))
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\n%d checks: %d PASS, %d FAIL, %d SKIP (%.1fs)\n",
		r.Summary.Total, r.Summary.Pass, r.Summary.Fail, r.Summary.Skip, float64(r.DurationMS)/1000)
	return b.String()
}

// oneLine flattens a detail to one line of at most 300 characters.
func oneLine(s string) string {
	return protocol.ClipN(strings.Join(strings.Fields(s), " "), 300-len(protocol.Ellipsis))
}
