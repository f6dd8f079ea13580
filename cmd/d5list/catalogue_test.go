package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A competitor works against the catalogue of the portal that will judge
// them (issue 14): a benchmark its organisers added is unknown to the
// built-in catalogue, and known to init, check and run with --server.
func TestCommandsUseThePortalsCatalogue(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	file := filepath.Join(t.TempDir(), "ours.yaml")
	ours := "- id: l2-site-digits\n  name: Site digits\n  level: 2\n  category: training\n  workload: digits-mlp\n  runs: 2\n" +
		"  division: {fixed: {dataset: synthetic-digits, model: mlp, model_kwargs: {hidden: 8}, epochs: 2}, mutable: {batch_size: 32, executor: builtin, optimizer: momentum, optimizer_args: {lr: 0.002, momentum: 0.9}, train_sampler: shuffle}}\n" +
		"  quality: {metric: eval_accuracy, target: 0.01, mode: first, direction: higher}\n" +
		"  ranking: {metric: time_to_train_s, direction: lower, unit: s}\n"
	if err := os.WriteFile(file, []byte(ours), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"admin", "benchmarks", "import", "--data", data, file}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	p := startPortalIn(t, data, 0)

	dir := filepath.Join(t.TempDir(), "sub")
	if err := run(ctx, []string{"init", "l2-site-digits", dir}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "l2-site-digits") {
		t.Fatalf("init without --server: %v, want the benchmark unknown", err)
	}
	if err := run(ctx, []string{"init", "l2-site-digits", dir, "--server", p.url, "--submitter", "Site Lab"}, io.Discard, io.Discard); err != nil {
		t.Fatalf("init --server: %v", err)
	}
	if err := run(ctx, []string{"run", dir, "--server", p.url}, io.Discard, io.Discard); err != nil {
		t.Fatalf("run --server: %v", err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"check", dir}, &out, io.Discard); err == nil || !strings.Contains(out.String(), "unknown_benchmark") {
		t.Fatalf("check without --server: %v %q, want unknown_benchmark", err, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"check", dir, "--server", p.url}, &out, io.Discard); err != nil {
		t.Fatalf("check --server: %v\n%s", err, out.String())
	}
	if last := strings.TrimSpace(out.String()); !strings.Contains(last, "\n  d5list submit "+shellWord(dir)+" --server "+p.url+" --token \"$D5LIST_TOKEN\"\n") || !strings.Contains(last, "OK: "+dir+" passes every check") {
		t.Errorf("check's output does not end with a success line and the command that submits: %q", last)
	}
	if err := run(ctx, []string{"check", dir, "--server", "http://127.0.0.1:1"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "catalogue of http://127.0.0.1:1") {
		t.Fatalf("check against a portal that does not answer: %v, want it named", err)
	}
}
