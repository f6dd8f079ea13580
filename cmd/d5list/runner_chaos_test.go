package main

import (
	"context"
	"testing"
	"time"

	"github.com/deep500/d5list/internal/chaos"
)

// Runner processes killed with SIGKILL at random points while they work
// through a queue (a dozen kills here; scripts/load's runner-chaos mode
// makes 1,000): no job is lost, none is completed or reported twice, and
// no verdict comes from a lease whose runner was killed holding it.
func TestRunnerKillsLoseNoJob(t *testing.T) {
	p := startPool(t, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	subs, err := chaos.Queue(ctx, p.db, 30, 1)
	if err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	kills, err := chaos.Run(ctx, chaos.Config{Bin: d5listBinary(t), Server: p.url, Token: p.runnerToken, TokenName: "pool",
		Runners: 3, Kills: 12, Holding: 3, MeanLife: time.Second, Heartbeat: 200 * time.Millisecond, Logs: logs}, p.db, subs)
	if err != nil {
		t.Fatal(err)
	}
	report, err := chaos.Check(ctx, p.db, subs, kills, logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(report)
	if err := report.Clean(); err != nil {
		t.Fatal(err)
	}
	if len(kills) != 12 || report.LeasesLost == 0 {
		t.Errorf("%d kills, %d of them holding a lease: want 12, some holding one", len(kills), report.LeasesLost)
	}
}
