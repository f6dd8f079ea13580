package store

import (
	"fmt"
	"testing"
)

func TestDecodedEntriesAreCopiesOfTheirOwn(t *testing.T) {
	var c decodedEntries
	raw := []byte(`{"submission_id": 7, "system_name": "sys", "value": 1.5, "measures": {"throughput": 10}}`)
	first, err := c.decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	first.Rank = 3
	first.Measures["throughput"] = 99
	again, err := c.decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if again.Rank != 0 || again.Measures["throughput"] != 10 || again.SubmissionID != 7 || again.Value != 1.5 {
		t.Fatalf("a kept entry changed with the copy handed out: %+v", again)
	}
	if _, err := c.decode([]byte(`{"value": "fast"}`)); err == nil {
		t.Fatal("an entry that does not decode was accepted")
	}
}

func TestDecodedEntriesStayBounded(t *testing.T) {
	var c decodedEntries
	for i := range 3 * maxDecodedEntries {
		e, err := c.decode(fmt.Appendf(nil, `{"submission_id": %d}`, i))
		if err != nil {
			t.Fatal(err)
		}
		if e.SubmissionID != int64(i) {
			t.Fatalf("entry %d decoded as %d", i, e.SubmissionID)
		}
		if len(c.m) > maxDecodedEntries {
			t.Fatalf("%d entries kept, the bound is %d", len(c.m), maxDecodedEntries)
		}
	}
}
