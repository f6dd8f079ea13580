package leaderboard

import (
	"fmt"
	"testing"
)

func TestPartsAreOfTheirMomentOnly(t *testing.T) {
	c := NewCache()
	m := c.Moment("b")
	c.KeepPart(m, "charts", "before")
	if v, ok := c.Part(c.Moment("b"), "charts"); !ok || v != "before" {
		t.Fatalf("the part kept at this moment: %v, %v", v, ok)
	}
	if _, ok := c.Part(c.Moment("b"), "other"); ok {
		t.Error("a part never kept was found")
	}
	c.BeginChange("b")
	if _, ok := c.Part(m, "charts"); ok {
		t.Error("a part was handed out while a change of its board was open")
	}
	open := c.Moment("b")
	c.KeepPart(open, "charts", "during")
	c.EndChange("b")
	after := c.Moment("b")
	if v, ok := c.Part(after, "charts"); ok {
		t.Errorf("after the change the part kept before it, or during it, was handed out: %v", v)
	}
	// A rendering that began before a change and ends after it keeps
	// nothing.
	c.BeginChange("b")
	c.EndChange("b")
	c.KeepPart(after, "charts", "overtaken")
	if v, ok := c.Part(c.Moment("b"), "charts"); ok {
		t.Errorf("a part made across a change was kept: %v", v)
	}
	// Another board's change leaves the part; an edition frozen does not.
	now := c.Moment("b")
	c.KeepPart(now, "charts", "now")
	c.Invalidate("other")
	if v, ok := c.Part(c.Moment("b"), "charts"); !ok || v != "now" {
		t.Errorf("another board's change dropped the part: %v, %v", v, ok)
	}
	c.BeginChangeAll()
	c.EndChangeAll()
	if _, ok := c.Part(c.Moment("b"), "charts"); ok {
		t.Error("the part outlived a change of every board")
	}
}

func TestPartsStayBounded(t *testing.T) {
	c := NewCache()
	for i := range 4 * maxParts {
		b := fmt.Sprint("bench-", i)
		c.KeepPart(c.Moment(b), "charts", i)
		if v, ok := c.Part(c.Moment(b), "charts"); !ok || v != i {
			t.Fatalf("part %d just kept: %v, %v", i, v, ok)
		}
		if len(c.parts) > maxParts {
			t.Fatalf("%d parts kept, the bound is %d", len(c.parts), maxParts)
		}
	}
}
