package protocol

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	reg, err := NewRegistry(
		DomainCode{Domain: "b", CodeInfo: CodeInfo{Code: "x-gone", HTTPStatus: http.StatusGone, Recoverable: true, Description: "gone"}},
		DomainCode{Domain: "a", CodeInfo: CodeInfo{Code: "x-broken", HTTPStatus: http.StatusInternalServerError, Description: "broken"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		code        Code
		status      int
		recoverable bool
		domain      string
		ok          bool
	}{
		{"x-gone", 410, true, "b", true},
		{"x-broken", 500, false, "a", true},
		{CodeRateLimited, 429, true, "", true},
		{"x-unknown", 500, false, "", false},
	} {
		info, ok := reg.Lookup(c.code)
		if ok != c.ok || reg.HTTPStatus(c.code) != c.status || reg.Recoverable(c.code) != c.recoverable || reg.DomainOf(c.code) != c.domain {
			t.Errorf("%s: %+v %v status %d recoverable %v domain %q", c.code, info, ok, reg.HTTPStatus(c.code), reg.Recoverable(c.code), reg.DomainOf(c.code))
		}
		env := reg.ErrorEnvelope("r1", Errorf(c.code, "m"))
		var p Error
		if err := json.Unmarshal(env.Payload, &p); err != nil || p.Recoverable != c.recoverable {
			t.Errorf("%s: envelope %s", c.code, env.Payload)
		}
		if got := reg.EnvelopeStatus(env); got != c.status {
			t.Errorf("%s: envelope status %d, want %d", c.code, got, c.status)
		}
	}
	if dc := reg.DomainCodes(); len(dc) != 2 || dc[0].Code != "x-broken" || dc[0].Category != "a" {
		t.Errorf("domain codes %+v", dc)
	}
	var none *Registry
	if _, ok := none.Lookup("x-gone"); ok || none.HTTPStatus(CodeCancelled) != 499 || none.DomainCodes() != nil {
		t.Error("a nil registry holds more than the standard codes")
	}
}

func TestNewRegistryRefuses(t *testing.T) {
	ok := CodeInfo{Code: "x-a", HTTPStatus: 400, Description: "a"}
	for _, c := range []struct {
		name  string
		codes []DomainCode
		want  string
	}{
		{"twice in one domain", []DomainCode{{"d", ok}, {"d", ok}}, "registered twice (first by domain d)"},
		{"twice in two domains", []DomainCode{{"d", ok}, {"e", ok}}, "first by domain d"},
		{"standard", []DomainCode{{"d", CodeInfo{Code: CodeCancelled, HTTPStatus: 499, Description: "c"}}}, "standard code"},
		{"no prefix", []DomainCode{{"d", CodeInfo{Code: "a", HTTPStatus: 400, Description: "a"}}}, "must match"},
		{"upper case", []DomainCode{{"d", CodeInfo{Code: "x-A", HTTPStatus: 400, Description: "a"}}}, "must match"},
		{"no domain", []DomainCode{{"", ok}}, "no domain"},
		{"status", []DomainCode{{"d", CodeInfo{Code: "x-a", HTTPStatus: 302, Description: "a"}}}, "not an error status"},
		{"description", []DomainCode{{"d", CodeInfo{Code: "x-a", HTTPStatus: 400}}}, "no description"},
	} {
		if _, err := NewRegistry(c.codes...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
