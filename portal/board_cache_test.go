package portal

import (
	"context"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/store"
)

// answered asks for the board's cached answer and says how it was
// answered: kept and current, or rendered.
func answered(t *testing.T, svc *Service, bench string) leaderboard.Freshness {
	t.Helper()
	_, f, err := svc.RenderBoard(bench, "html?unverified=1", func(int) (*leaderboard.Rendered, error) {
		return leaderboard.NewRendered("text/plain", []byte("board")), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// current has the board's answer rendered and kept: the first request
// after a change renders it, the next finds it.
func current(t *testing.T, svc *Service, bench string) {
	t.Helper()
	answered(t, svc, bench)
}

// A lease (the entry turns running), an undelivered lease given back
// (queued again) and an organiser's cancel (the entry leaves) each change
// the board that includes unverified entries, so each makes the board's
// cached answers out of date: the next request has them rendered again.
func TestLeaseAndCancelDropCachedBoards(t *testing.T) {
	svc, cs, _ := newDispatchService(t)
	ctx := context.Background()
	const bench = "l2-digits-mlp-cpu"
	kept := func(what string) {
		t.Helper()
		current(t, svc, bench)
		if f := answered(t, svc, bench); f != leaderboard.Hit {
			t.Fatalf("before %s: the answer is %v, want kept and current", what, f)
		}
	}
	dropped := func(what string) {
		t.Helper()
		if f := answered(t, svc, bench); f != leaderboard.Miss {
			t.Fatalf("after %s: the cached board was %v, want it rendered again", what, f)
		}
	}
	queueJob(t, svc, cs, bench)
	kept("the lease")
	lease, err := svc.Lease(ctx, "r/0", nil)
	if err != nil || lease == nil {
		t.Fatalf("Lease: %v, %v", lease, err)
	}
	dropped("a lease")

	kept("giving the lease back")
	svc.giveBack(ctx, lease)
	dropped("an undelivered lease given back")

	kept("the cancel")
	org := &d5list.User{Name: "olga", Role: d5list.RoleOrganiser}
	if err := svc.CancelJob(ctx, org, lease.Job.ID); err != nil {
		t.Fatal(err)
	}
	dropped("a cancelled job")
}

// A lease that expires on the job's last attempt is settled when a runner
// next asks for work: the job is given up and its entry fails, which
// changes the board that includes unverified entries. That lease request
// makes the board's cached answers out of date, whether it then leases nothing
// or a job of another benchmark.
func TestExpiredLastLeaseDropsCachedBoards(t *testing.T) {
	for _, next := range []string{"nothing", "another benchmark's job"} {
		t.Run(next, func(t *testing.T) {
			svc, cs, _ := newDispatchService(t)
			ctx := context.Background()
			const bench = "l2-digits-mlp-cpu"
			clock := time.Now()
			cs.DB.Now = func() time.Time { return clock }
			cs.DB.MaxAttempts = 1
			queueJob(t, svc, cs, bench)
			lease, err := svc.Lease(ctx, "r/0", nil)
			if err != nil || lease == nil {
				t.Fatalf("Lease: %v, %v", lease, err)
			}
			labels := map[string]string(nil)
			if next != "nothing" {
				queueJob(t, svc, cs, "gpu-bench")
				labels = map[string]string{"gpu": "h100"}
			}
			current(t, svc, bench)

			clock = clock.Add(2 * time.Minute) // past the lease's minute
			got, err := svc.Lease(ctx, "r/1", labels)
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != (next != "nothing") || (got != nil && got.Job.BenchmarkID != "gpu-bench") {
				t.Fatalf("the second lease: %+v, want %s", got, next)
			}
			sub, err := cs.Submission(ctx, lease.Job.SubmissionID)
			if err != nil || sub.Status != d5list.StatusFailed {
				t.Fatalf("the entry whose last lease expired: %v %v, want failed", sub, err)
			}
			if f := answered(t, svc, bench); f != leaderboard.Miss {
				t.Errorf("the cached board was %v after the expired lease failed its entry, want it rendered again", f)
			}
		})
	}
}

// freezeWatcher is the store with a look at the service while an edition
// is written, before the freeze's commit begins, and right after the
// commit, before the service has its store call's answer.
type freezeWatcher struct {
	*countingStore
	whileWriting, afterCommit func()
}

func (f *freezeWatcher) FreezeEdition(ctx context.Context, name, by string, boards []d5list.Leaderboard, beforeCommit func(*d5list.Edition)) (*d5list.Edition, error) {
	ed, err := f.countingStore.FreezeEdition(ctx, name, by, boards, func(ed *d5list.Edition) {
		if f.whileWriting != nil {
			f.whileWriting()
		}
		beforeCommit(ed)
	})
	if err == nil && f.afterCommit != nil {
		f.afterCommit()
	}
	return ed, err
}

// A freeze takes every board's answers out of the cache from right before
// its commit, not while it encodes and writes the edition: until then the
// readers, who began before the commit, share the answers kept; the first
// request after it has its answer rendered again.
func TestFreezeKeepsAnswersUntilItsCommit(t *testing.T) {
	_, cs, _ := newDispatchService(t)
	fw := &freezeWatcher{countingStore: cs}
	svc := New(fw, nil, Config{LeaseTTL: time.Minute}, nil)
	t.Cleanup(svc.StopWaiting)
	const bench = "l2-digits-mlp-cpu"
	current(t, svc, bench)
	writing := false
	fw.whileWriting = func() {
		writing = true
		if f := answered(t, svc, bench); f != leaderboard.Hit {
			t.Errorf("while the edition was written the answer was %v, want the kept one", f)
		}
	}
	organiser := &d5list.User{Name: "olga", Role: d5list.RoleOrganiser}
	if _, err := svc.FreezeEdition(context.Background(), organiser, "2026-11"); err != nil {
		t.Fatal(err)
	}
	if !writing {
		t.Fatal("the freeze never wrote its edition through the store")
	}
	if f := answered(t, svc, bench); f != leaderboard.Miss {
		t.Fatalf("the first request after the freeze: %v, want its answer rendered again", f)
	}
	if f := answered(t, svc, bench); f != leaderboard.Hit {
		t.Fatalf("the next request: %v, want the answer kept again once the freeze ended", f)
	}
}

// A request that begins after a freeze's commit reads the new edition,
// however soon: between the commit and the service's own update of what
// it keeps of the editions, the latest edition, the development through
// the editions and a snapshot's reads all hold it.
func TestFreezeIsReadRightAfterItsCommit(t *testing.T) {
	_, cs, _ := newDispatchService(t)
	fw := &freezeWatcher{countingStore: cs}
	svc := New(fw, nil, Config{LeaseTTL: time.Minute}, nil)
	t.Cleanup(svc.StopWaiting)
	ctx := context.Background()
	const bench = "l2-digits-mlp-cpu"
	organiser := &d5list.User{Name: "olga", Role: d5list.RoleOrganiser}
	b, err := cs.Benchmark(ctx, bench)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.InsertSynthetic(ctx, leaderboard.SyntheticRange(b, 0, 3, 3, store.SyntheticSubmitter, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.FreezeEdition(ctx, organiser, "2026-10"); err != nil {
		t.Fatal(err)
	}
	// Read once, as the first board rendered reads it: a reader that
	// finds it unread waits for the freeze under way to end.
	if dev, err := svc.Development(ctx, bench); err != nil || len(dev) != 1 {
		t.Fatalf("the development after one freeze: %+v (%v)", dev, err)
	}
	holds := func(t *testing.T, ctx context.Context, where string) {
		t.Helper()
		if e, err := svc.LatestEdition(ctx); err != nil || editionName(e) != "2026-11" {
			t.Errorf("%s: the latest edition is %q (%v), want 2026-11", where, editionName(e), err)
		}
		dev, err := svc.Development(ctx, bench)
		if err != nil || len(dev) != 2 || dev[1].Edition != "2026-11" {
			t.Errorf("%s: the development is %+v (%v), want 2026-10 then 2026-11", where, dev, err)
		}
	}
	checked := false
	fw.afterCommit = func() {
		checked = true
		holds(t, ctx, "outside a snapshot")
		err := svc.ReadSnapshot(ctx, func(ctx context.Context) error {
			holds(t, ctx, "under a snapshot")
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	if _, err := svc.FreezeEdition(ctx, organiser, "2026-11"); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("the freeze never committed its edition through the store")
	}
	holds(t, ctx, "after the freeze")
}
