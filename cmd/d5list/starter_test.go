package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/sysinfo"
)

func readJSONFile(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// `d5list init` writes what it can know and marks only what it cannot:
// this machine's processor, cores, memory and operating system, from the
// probe a runner labels itself with; the submitter, from the account of
// --token on --server, and a placeholder without one, which it names and
// which `d5list check` refuses until it is written.
func TestInitWritesWhatItCanKnow(t *testing.T) {
	p := startPortal(t, 0)
	ctx := context.Background()
	work := t.TempDir()
	alone := filepath.Join(work, "alone")
	var out bytes.Buffer
	if err := run(ctx, []string{"init", "l0-gemm-cpu", alone}, &out, io.Discard); err != nil {
		t.Fatalf("init: %v", err)
	}
	if !strings.Contains(out.String(), "fill in submitter (submission.json, system.json)") || strings.Contains(out.String(), "fill in framework") {
		t.Errorf("init printed %q, want it to name the submitter, and only it, as left to fill in", out.String())
	}
	info := sysinfo.Detect()
	system := readJSONFile(t, filepath.Join(alone, "system.json"))
	for field, want := range map[string]string{
		"host_processor_model_name": info.CPUModel, "host_processor_core_count": strconv.Itoa(info.Cores),
		"operating_system": info.OS, "framework": builtinFramework,
	} {
		if system[field] != want {
			t.Errorf("system.json %s = %v, want %q from this machine", field, system[field], want)
		}
	}
	for _, file := range []string{"submission.json", "system.json"} {
		if s, _ := readJSONFile(t, filepath.Join(alone, file))["submitter"].(string); !bundle.IsPlaceholder(s) || strings.Contains(s, "anonymous") {
			t.Errorf("%s names the submitter %q, want a placeholder", file, s)
		}
	}
	if err := run(ctx, []string{"run", "--runs", "1", alone}, io.Discard, io.Discard); err != nil {
		t.Fatalf("run: %v", err)
	}
	out.Reset()
	if err := run(ctx, []string{"check", alone}, &out, &out); !errors.Is(err, errSilent) ||
		!strings.Contains(out.String(), "submission.json: "+bundle.CodePlaceholder+": submitter still says") {
		t.Errorf("check of a folder that still holds a placeholder: %v\n%s\nwant it refused, naming the submitter", err, out.String())
	}

	if err := run(ctx, []string{"admin", "user", "--data", p.data, "--user", "alice", "--organisation", "Rita Lab"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(work, "named")
	out.Reset()
	if err := run(ctx, []string{"init", "l0-gemm-cpu", named, "--server", p.url, "--token", p.token}, &out, io.Discard); err != nil {
		t.Fatalf("init --server --token: %v", err)
	}
	for _, file := range []string{"submission.json", "system.json"} {
		if s := readJSONFile(t, filepath.Join(named, file))["submitter"]; s != "Rita Lab" {
			t.Errorf("with the account's token, %s names the submitter %v, want its organisation Rita Lab", file, s)
		}
	}
	if strings.Contains(out.String(), "fill in") {
		t.Errorf("init with the account's token printed %q, want nothing left to fill in", out.String())
	}
}

// `d5list run` writes what this machine's probe knows into the fields a
// starter left to fill in, keeping the rest of system.json as written:
// each example's host fields, and, for the builtin workloads, the
// framework.
func TestRunFillsWhatTheMachineKnows(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "gemm")
	if _, err := writeStarter(mustCatalogue(t), "l0-gemm-cpu", dir, "Rita Lab"); err != nil {
		t.Fatal(err)
	}
	// As the examples ship it: the host left to the run.
	example, err := os.ReadFile("../../examples/pytorch-gemm/system.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "system.json"), example, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"run", "--runs", "1", dir}, &out, io.Discard); err != nil {
		t.Fatalf("run: %v", err)
	}
	info := sysinfo.Detect()
	system := readJSONFile(t, filepath.Join(dir, "system.json"))
	for field, want := range map[string]string{
		"host_processor_model_name": info.CPUModel, "host_processor_core_count": strconv.Itoa(info.Cores), "operating_system": info.OS,
	} {
		if system[field] != want || !strings.Contains(out.String(), "wrote "+field) {
			t.Errorf("after run, system.json %s = %v (run printed %q), want %q from this machine", field, system[field], out.String(), want)
		}
	}
	if system["framework"] != "PyTorch (Debian python3-torch)" || system["submitter"] != "Example submitter" {
		t.Errorf("run changed fields that held values: %v", system)
	}
	for k, v := range system {
		if s, ok := v.(string); ok && bundle.IsPlaceholder(s) {
			t.Errorf("after run, system.json %s still says %q", k, s)
		}
	}
}

func mustCatalogue(t *testing.T) []d5list.Benchmark {
	t.Helper()
	bs, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	return bs
}
