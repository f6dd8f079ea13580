package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deep500/d5list/store"
)

// An operator keeps the portal's own benchmarks in a file: import stores
// them, export prints the catalogue and export --own them alone, in a form
// import reads, and a built-in benchmark is refused with the reason (the
// next start would undo it). The help names the command.
func TestAdminBenchmarksImportExport(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	file := filepath.Join(t.TempDir(), "ours.yaml")
	ours := "benchmarks:\n  - id: l2-ours\n    name: Ours\n    level: 2\n    category: training\n    runs: 3\n    ranking: {metric: time_to_train_s, direction: lower, unit: s}\n    requires: {framework.torch: \"*\"}\n"
	if err := os.WriteFile(file, []byte(ours), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"admin", "benchmarks", "import", "--data", data, file}, &out, io.Discard); err != nil || out.String() != "saved l2-ours\n" {
		t.Fatalf("import: %q %v", out.String(), err)
	}
	out.Reset()
	if err := run(ctx, []string{"admin", "benchmarks", "export", "--data", data}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if catalogue := out.String(); !strings.Contains(catalogue, "id: l2-ours") || !strings.Contains(catalogue, "id: l2-digits-mlp-cpu") {
		t.Fatalf("export printed %q, want the whole catalogue", catalogue)
	}
	out.Reset()
	if err := run(ctx, []string{"admin", "benchmarks", "export", "--data", data, "--own"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	exported := out.String()
	if !strings.Contains(exported, "id: l2-ours") || strings.Contains(exported, "l2-digits-mlp-cpu") {
		t.Fatalf("export --own printed %q, want only the portal's own benchmark", exported)
	}
	// What export printed, imported into another portal, is the same benchmark.
	other := t.TempDir()
	if err := os.WriteFile(file, []byte(exported), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"admin", "benchmarks", "import", "--data", other, file}, io.Discard, io.Discard); err != nil {
		t.Fatalf("importing the export: %v", err)
	}
	db, err := store.Open(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Benchmark(ctx, "l2-ours")
	db.Close()
	if err != nil || b.Runs != 3 || b.Requires["framework.torch"] != "*" || b.Ranking.Unit != "s" {
		t.Fatalf("round trip: %+v %v", b, err)
	}

	unknown := strings.ReplaceAll(ours, "    runs: 3\n", "    runs: 3\n    workload: digits-mpl\n")
	if err := os.WriteFile(file, []byte(unknown), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(ctx, []string{"admin", "benchmarks", "import", "--data", data, file}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `workload: "digits-mpl"`) || !strings.Contains(err.Error(), "wait in the queue") {
		t.Fatalf("importing an unknown workload: %v, want it refused with the reason", err)
	}

	var help bytes.Buffer
	_ = run(ctx, []string{"--help"}, &help, &help)
	if !strings.Contains(help.String(), "admin   benchmarks export") {
		t.Errorf("d5list --help does not name admin benchmarks:\n%s", help.String())
	}

	if err := os.WriteFile(file, []byte(strings.ReplaceAll(ours, "l2-ours", "l2-digits-mlp-cpu")), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(ctx, []string{"admin", "benchmarks", "import", "--data", data, file}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "built in") || !strings.Contains(err.Error(), "ours.yaml") {
		t.Fatalf("importing a built-in benchmark: %v, want it refused with the reason and the file", err)
	}
}
