package chrome_test

import (
	"context"
	"errors"
	"testing"

	"github.com/manglecp/manglecp/domains/browser/chrome"
)

// TestFormTabsAndSelect: a whole form filled in one call (text fields
// and a select), a select option chosen alone, an unknown option
// refused, a second tab listed and switched to, and the session ended.
func TestFormTabsAndSelect(t *testing.T) {
	path := needChromium(t)
	ts := formTableApp(t)
	b, id := liveSession(t, path, ts.URL+"/")
	ctx := context.Background()
	if _, err := b.FillFormSession(ctx, "ada", id, []chrome.Field{{"Customer", "Grace"}, {"qty", "3"}, {"Shipping", "Standard"}, {"Gift wrap", "false"}}, ""); err != nil {
		t.Fatal(err)
	}
	value := func(role, name string) string {
		p, _, err := b.ReadSession(ctx, "ada", id, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Elements {
			if e.Role == role && e.Name == name {
				return e.Value
			}
		}
		return "(none)"
	}
	if c, q, s := value("textbox", "Customer"), value("spinbutton", "Quantity"), value("combobox", "Shipping"); c != "Grace" || q != "3" || s != "Standard" {
		t.Errorf("after the form fill: %q %q %q", c, q, s)
	}
	p, _, err := b.ReadSession(ctx, "ada", id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range p.Elements {
		if e.Ref == "Gift wrap" && e.Checked {
			t.Errorf("the form fill left Gift wrap checked")
		}
	}
	if _, err := b.ActSession(ctx, "ada", id, &chrome.Act{Kind: "select", ElementID: "ship", Value: "Express"}); err != nil {
		t.Fatal(err)
	}
	if s := value("combobox", "Shipping"); s != "Express" {
		t.Errorf("after select: %q", s)
	}
	if _, err := b.ActSession(ctx, "ada", id, &chrome.Act{Kind: "select", ElementID: "ship", Value: "Teleport"}); !errors.As(err, new(*chrome.OptionError)) {
		t.Errorf("unknown option: %v", err)
	}
	if _, err := b.FillFormSession(ctx, "ada", id, []chrome.Field{{"nope", "x"}}, ""); !errors.As(err, new(*chrome.ElementNotFound)) {
		t.Errorf("unknown field: %v", err)
	}
	// Tabs.
	if _, err := b.OpenTab(ctx, "ada", id, ts.URL+"/second"); err != nil {
		t.Fatal(err)
	}
	tabs, err := b.TabsSession(ctx, "ada", id)
	if err != nil || len(tabs) != 2 || !tabs[1].Current || tabs[1].URL != ts.URL+"/second" || tabs[0].Title != "Orders admin" {
		t.Fatalf("tabs: %v %+v", err, tabs)
	}
	o, err := b.SwitchTabSession(ctx, "ada", id, 0)
	if err != nil || o.URL != ts.URL+"/" {
		t.Fatalf("switch: %v %+v", err, o)
	}
	if s := value("combobox", "Shipping"); s != "Express" {
		t.Errorf("the first tab kept its state? %q", s)
	}
	if _, err := b.SwitchTabSession(ctx, "ada", id, 5); !errors.As(err, new(*chrome.TabError)) {
		t.Errorf("tab 5: %v", err)
	}
	if _, err := b.TabsSession(ctx, "eve", id); !errors.As(err, new(*chrome.SessionOwnerError)) {
		t.Errorf("another identity: %v", err)
	}
	// close_session.
	if err := b.EndSession(ctx, "ada", id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TabsSession(ctx, "ada", id); !errors.As(err, new(*chrome.SessionGoneError)) {
		t.Errorf("after EndSession: %v", err)
	}
}
