package handlers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A budget lets work in while its shares fit, makes the rest wait in
// turn, counts work larger than the budget as all of it, collects each
// piece's garbage as it ends, and hands memory back when the last holder
// leaves, not before.
func TestBudget(t *testing.T) {
	b := newBudget(100)
	var collected, givenBack atomic.Int32
	b.collect = func(idle bool) {
		if idle {
			givenBack.Add(1)
		} else {
			collected.Add(1)
		}
	}
	ctx := context.Background()

	first, err := b.hold(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.hold(ctx, 40)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan func(), 1)
	go func() {
		huge, err := b.hold(ctx, 1000) // more than the budget: all of it
		if err != nil {
			t.Error(err)
		}
		waiting <- huge
	}()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := b.hold(short, 1); err == nil {
		t.Fatal("a share was held while the budget was spent")
	}
	first()
	first() // a second call gives nothing back twice
	select {
	case <-waiting:
		t.Fatal("work as large as the budget started while 40 of it were held")
	case <-time.After(100 * time.Millisecond):
	}
	if n := givenBack.Load(); n != 0 {
		t.Fatalf("memory handed back %d times while work was held", n)
	}
	second()
	huge := <-waiting
	huge()
	deadline := time.Now().Add(10 * time.Second)
	for givenBack.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if givenBack.Load() == 0 {
		t.Error("memory not handed back after the burst")
	}
	if n := collected.Load(); n != 3 {
		t.Errorf("%d collections for the 3 pieces of work that ended, want 3", n)
	}
}
