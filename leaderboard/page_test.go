package leaderboard

import (
	"errors"
	"net/url"
	"testing"

	d5list "github.com/deep500/d5list"
)

// One page of one board has one cache variant and one link, however the
// query spells it; malformed values are refused naming the parameter.
func TestPageVariantNormalised(t *testing.T) {
	variant := func(raw string) string {
		t.Helper()
		q, _ := url.ParseQuery(raw)
		opt, err := ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParsePage(q)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return opt.PageVariant(p)
	}
	for _, group := range [][]string{
		{"", "page=1", "per=100", "page=1&per=100", "page=+1"},
		{"page=2", "page=02", "per=100&page=2", "page=%202"},
		{"framework=Torch&page=3&per=50", "per=50&page=3&framework=torch", "framework=%20torch&page=03&per=050"},
	} {
		want := variant(group[0])
		for _, raw := range group[1:] {
			if got := variant(raw); got != want {
				t.Errorf("%q has variant %q, %q has %q", raw, got, group[0], want)
			}
		}
	}
	if variant("page=2") == variant("") || variant("per=50") == variant("") {
		t.Error("another page or page size shares the first page's variant")
	}
	for _, raw := range []string{"page=0", "page=-3", "page=x", "page=1.5", "per=9", "per=1001", "per=all"} {
		q, _ := url.ParseQuery(raw)
		if _, err := ParsePage(q); d5list.ErrorCode(err) != d5list.EINVALID {
			t.Errorf("%s: %v, want an invalid-input error", raw, err)
		}
	}
}

func TestPageBoundsAndCheck(t *testing.T) {
	p := Page{Number: 3, Per: 100}
	if lo, hi := p.Bounds(250); lo != 200 || hi != 250 {
		t.Errorf("page 3 of 250 rows: [%d, %d)", lo, hi)
	}
	if n := p.Pages(250); n != 3 {
		t.Errorf("250 rows: %d pages", n)
	}
	if err := p.Check(250); err != nil {
		t.Error(err)
	}
	var de *d5list.Error
	if err := p.Check(200); !errors.As(err, &de) || de.Code != d5list.ENOTFOUND {
		t.Errorf("page 3 of 200 rows: %v, want not found", err)
	}
	if err := (Page{}).Check(0); err != nil {
		t.Errorf("page 1 of an empty board: %v", err)
	}
	if lo, hi := (Page{}).Bounds(0); lo != 0 || hi != 0 {
		t.Errorf("empty board: [%d, %d)", lo, hi)
	}
}
