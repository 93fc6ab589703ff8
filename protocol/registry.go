package protocol

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
)

// DomainCode is an error code a domain registers beside the standard codes
// (Spec 09 section 3.2: custom codes start with "x-"). Domain names the
// domain that owns the code; CodeInfo gives its HTTP status, whether a
// client can recover, and a one-line description. An empty Category
// defaults to the domain name.
type DomainCode struct {
	Domain string
	CodeInfo
}

// Registry is the error registry of one server: the standard codes of
// [Codes] plus the codes its domain registered. It is built once with
// [NewRegistry] and never changes, so it is safe for concurrent use. A nil
// *Registry holds only the standard codes.
type Registry struct {
	domain []DomainCode
	index  map[Code]int
}

var domainCodeSyntax = regexp.MustCompile(`^x-[a-z][a-z0-9_]{0,62}$`)

// NewRegistry returns a registry of the standard codes and codes. It fails
// when a code is registered twice (by one domain or by two), collides with
// a standard code, does not have the form "x-name" (lowercase letters,
// digits and underscores), has no domain or description, or has an HTTP
// status outside 400-599. A server calls it at construction, so a bad
// registration stops start-up.
func NewRegistry(codes ...DomainCode) (*Registry, error) {
	r := &Registry{index: map[Code]int{}}
	for _, c := range codes {
		if c.Domain == "" {
			return nil, fmt.Errorf("error code %q: no domain", c.Code)
		}
		if _, ok := Lookup(c.Code); ok {
			return nil, fmt.Errorf("domain %s: error code %s is a standard code", c.Domain, c.Code)
		}
		if _, ok := LookupCustom(c.Code); ok {
			return nil, fmt.Errorf("domain %s: error code %s is a code of the HTTP binding", c.Domain, c.Code)
		}
		if !domainCodeSyntax.MatchString(string(c.Code)) {
			return nil, fmt.Errorf("domain %s: error code %q must match %s (Spec 09 section 3.2)", c.Domain, c.Code, domainCodeSyntax)
		}
		if i, ok := r.index[c.Code]; ok {
			return nil, fmt.Errorf("domain %s: error code %s is registered twice (first by domain %s)", c.Domain, c.Code, r.domain[i].Domain)
		}
		if c.HTTPStatus < 400 || c.HTTPStatus > 599 {
			return nil, fmt.Errorf("domain %s: error code %s: HTTP status %d is not an error status (400-599)", c.Domain, c.Code, c.HTTPStatus)
		}
		if c.Description == "" {
			return nil, fmt.Errorf("domain %s: error code %s has no description", c.Domain, c.Code)
		}
		if c.Category == "" {
			c.Category = c.Domain
		}
		r.index[c.Code] = len(r.domain)
		r.domain = append(r.domain, c)
	}
	return r, nil
}

// Lookup returns the entry of a standard code, a custom code of this
// implementation ([CustomCodes]) or a registered domain code.
func (r *Registry) Lookup(c Code) (info CodeInfo, ok bool) {
	if info, ok := Lookup(c); ok {
		return info, true
	}
	if r == nil {
		return CodeInfo{}, false
	}
	if i, ok := r.index[c]; ok {
		return r.domain[i].CodeInfo, true
	}
	return CodeInfo{}, false
}

// DomainOf returns the domain that registered c, or "" for a standard or
// unknown code.
func (r *Registry) DomainOf(c Code) string {
	if r == nil {
		return ""
	}
	if i, ok := r.index[c]; ok {
		return r.domain[i].Domain
	}
	return ""
}

// DomainCodes returns a copy of the registered domain codes, sorted by
// domain and code.
func (r *Registry) DomainCodes() []DomainCode {
	if r == nil {
		return nil
	}
	out := append([]DomainCode(nil), r.domain...)
	sortDomainCodes(out)
	return out
}

func sortDomainCodes(c []DomainCode) {
	sort.Slice(c, func(i, j int) bool {
		if c[i].Domain != c[j].Domain {
			return c[i].Domain < c[j].Domain
		}
		return c[i].Code < c[j].Code
	})
}

// HTTPStatus is the status of c: its registry entry's, or 500 for an
// unknown code.
func (r *Registry) HTTPStatus(c Code) int {
	if info, ok := r.Lookup(c); ok {
		return info.HTTPStatus
	}
	return http.StatusInternalServerError
}

// Recoverable reports whether the registry marks c recoverable; unknown
// codes are not.
func (r *Registry) Recoverable(c Code) bool {
	info, ok := r.Lookup(c)
	return ok && info.Recoverable
}

// ErrorEnvelope is [ErrorEnvelope] with the recoverable flag taken from r,
// so domain codes carry the flag their domain registered.
func (r *Registry) ErrorEnvelope(id string, e *Error) *Envelope {
	env := ErrorEnvelope(id, e)
	if _, standard := Lookup(e.Code); standard || !r.Recoverable(e.Code) {
		return env
	}
	p := *e
	p.Recoverable = true
	if raw, err := json.Marshal(&p); err == nil {
		env.Payload, env.marshaled = raw, raw
	}
	return env
}

// EnvelopeStatus is the HTTP status of an envelope under r: 200 for
// responses, the registry status of the code for errors.
func (r *Registry) EnvelopeStatus(env *Envelope) int {
	if env.Type != TypeError {
		return http.StatusOK
	}
	var p struct {
		Code Code `json:"code"`
	}
	_ = json.Unmarshal(env.Payload, &p)
	return r.HTTPStatus(p.Code)
}
