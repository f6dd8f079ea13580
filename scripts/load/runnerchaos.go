package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/deep500/d5list/internal/chaos"
	"github.com/deep500/d5list/store"
)

// runnerChaosBench kills runners at scale (issue 26): the real `d5list
// serve` on loopback, with a lease of leaseTTL, and `runners` real `d5list
// runner --executor builtin` processes work through a queue of `jobs`
// jobs (epochs of the digits MLP each) while `kills` of them are killed
// with SIGKILL, each at a random moment (exponential lives of mean
// meanLife: the same chance of a kill at every moment, whatever the
// runner is doing), a fresh one started in each one's place. Once the kills are made and the queue is
// drained, the portal's records of every job are read (internal/chaos):
// jobs lost, completed twice, reported done by two runners, and verdicts
// from a lease whose runner was killed holding it. It exits 1 unless all
// are 0.
func runnerChaosBench(bin, work string, jobs, kills, runners, epochs int, meanLife, leaseTTL time.Duration) {
	s := startServer(bin, filepath.Join(work, "data"), "--lease-ttl", leaseTTL.String())
	defer s.stop()
	out, err := exec.Command(bin, "admin", "runner-token", "--data", s.data, "--name", "chaos").Output()
	if err != nil {
		log.Fatalf("admin runner-token: %v", err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, s.data)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	subs, err := chaos.Queue(ctx, db, jobs, epochs)
	if err != nil {
		log.Fatal(err)
	}
	logs := filepath.Join(work, "runners")
	if err := os.Mkdir(logs, 0o755); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("runner chaos: %d jobs (%d epoch each), %d runner processes at a time, %d SIGKILLs at random moments (mean life %v); lease %v\n",
		jobs, epochs, runners, kills, meanLife, leaseTTL)
	start := time.Now()
	killed, err := chaos.Run(ctx, chaos.Config{Bin: bin, Server: s.url, Token: strings.TrimSpace(string(out)), TokenName: "chaos",
		Runners: runners, Kills: kills, MeanLife: meanLife, Heartbeat: leaseTTL / 5, Logs: logs}, db, subs)
	if err != nil {
		log.Fatal(err)
	}
	elapsed := time.Since(start)
	report, err := chaos.Check(ctx, db, subs, killed, logs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d kills in %v (%.1f jobs done a second)\n%s\n", len(killed), elapsed.Round(time.Second),
		float64(report.Done)/elapsed.Seconds(), report)
	if err := report.Clean(); err != nil {
		log.Fatal(err)
	}
}
