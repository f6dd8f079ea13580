package leaderboard

import (
	"fmt"
	"testing"
)

// part is c.Part of m that reports whether it was made for this call.
func part(t *testing.T, c *Cache, m Moment, name string, value any) (any, bool) {
	t.Helper()
	made := false
	v, err := c.Part(m, name, func() (any, error) { made = true; return value, nil })
	if err != nil {
		t.Fatal(err)
	}
	return v, made
}

func TestPartsAreOfTheirMomentOnly(t *testing.T) {
	c := NewCache()
	m := c.Moment("b")
	if v, made := part(t, c, m, "charts", "before"); !made || v != "before" {
		t.Fatalf("the first part: %v, made %v", v, made)
	}
	if v, made := part(t, c, c.Moment("b"), "charts", "again"); made || v != "before" {
		t.Fatalf("the part of this moment was not shared: %v, made %v", v, made)
	}
	if _, made := part(t, c, c.Moment("b"), "other", "x"); !made {
		t.Error("a part never made was found")
	}
	c.BeginChange("b")
	open := c.Moment("b")
	if v, made := part(t, c, m, "charts", "during"); !made || v != "during" {
		t.Errorf("a rendering of before a change got %v (made %v) while the change was open", v, made)
	}
	if _, made := part(t, c, open, "charts", "open"); !made {
		t.Error("a part was shared while a change of its board was open")
	}
	c.EndChange("b")
	after := c.Moment("b")
	if v, made := part(t, c, after, "charts", "after"); !made || v != "after" {
		t.Errorf("after the change a part kept before it, or during it, was shared: %v", v)
	}
	// A part made across a change is its maker's only.
	m = c.Moment("b")
	v, err := c.Part(m, "across", func() (any, error) {
		c.BeginChange("b")
		c.EndChange("b")
		return "across", nil
	})
	if err != nil || v != "across" {
		t.Fatalf("%v, %v", v, err)
	}
	if _, made := part(t, c, c.Moment("b"), "across", "new"); !made {
		t.Error("a part made across a change was kept")
	}
	// Another board's change leaves the part; an edition frozen does not.
	now := c.Moment("b")
	part(t, c, now, "charts", "now")
	c.Invalidate("other")
	if v, made := part(t, c, c.Moment("b"), "charts", "x"); made || v != "now" {
		t.Errorf("another board's change dropped the part: %v, made %v", v, made)
	}
	c.BeginChangeAll()
	c.EndChangeAll()
	if _, made := part(t, c, c.Moment("b"), "charts", "x"); !made {
		t.Error("the part outlived a change of every board")
	}
}

func TestPartsStayBounded(t *testing.T) {
	c := NewCache()
	for i := range 4 * maxParts {
		b := fmt.Sprint("bench-", i)
		part(t, c, c.Moment(b), "charts", i)
		if v, made := part(t, c, c.Moment(b), "charts", -1); made || v != i {
			t.Fatalf("part %d just kept: %v, made %v", i, v, made)
		}
		if len(c.parts) > maxParts {
			t.Fatalf("%d parts kept, the bound is %d", len(c.parts), maxParts)
		}
	}
}
