package runner

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// evaluationSpec is a benchmark without a harness whose evaluation reads
// the models a job's runs hand over (here text files naming an accuracy;
// a real evaluation loads weights and scores them on the runner's data)
// and answers with one accuracy a model.
func evaluationSpec() d5list.JobSpec {
	spec := testSpec(11)
	spec.FreshSeeds = []int64{907}
	spec.Benchmark.ID = "l2-imported-test"
	spec.Benchmark.Verify.Evaluation = &d5list.ModelEvaluation{MaxModelBytes: 1 << 20, Script: `import json, sys
for model in sys.argv[1:]:
    with open(model) as f:
        text = f.read()
    if text.startswith("crash"):
        raise SystemExit("cannot load this model" + (": " + "x" * 2000 if "long" in text else ""))
    print("evaluating", len(text), "bytes")
    print(json.dumps({"accuracy": float(text.split()[0])}))
`}
	return spec
}

// modelRun is an entrypoint that takes its seed, logs its window, and
// runs the shell commands before (ahead of its run_stop) and after (once
// it is logged, after a pause).
func modelRun(before, after string) string {
	s := "#!/bin/sh\n" + takeSeed + mllogLine("run_start", "1000", "") + before + "\n"
	s += mllogLine("run_stop", "1010", `"status": "success"`)
	if after != "" {
		s += "sleep 0.3\n" + after + "\n"
	}
	return s
}

// writeModel is the shell command that writes text as the model.
func writeModel(text string) string { return "printf '%s' '" + text + "' > \"$D5_MODEL\"" }

// A benchmark without a harness but with an evaluation: the runner keeps
// the model each run writes into $D5_MODEL before its run_stop and scores
// it itself, in the job's sandbox, once the runs are over. A model handed
// over after run_stop, none at all, one larger than the benchmark takes,
// one the evaluation cannot load and one it scores as NaN each fail the
// run's audit with what happened.
func TestProcessEvaluatesTheModelItself(t *testing.T) {
	needBwrap(t)
	cases := []struct {
		name, before, after string
		code, words         string // "" for a model the runner scores
	}{
		{name: "a model handed over in the window", before: writeModel("0.9375 weights")},
		// Larger than a pipe holds, so that the runner reads it while it
		// is written.
		{name: "a large model handed over in the window", before: "{ printf '0.9375 '; head -c 900000 /dev/zero; } > \"$D5_MODEL\""},
		{name: "a model written after run_stop", after: writeModel("0.9375 weights"), code: d5list.AuditMissing, words: "after its run_stop"},
		{name: "a model begun in the window and ended after run_stop", before: "printf '0.9375 ' > \"$D5_MODEL\"", after: writeModel("weights"), code: d5list.AuditMissing, words: "7 bytes of its model reached $D5_MODEL after its run_stop"},
		{name: "no model", code: d5list.AuditMissing, words: "wrote no model"},
		{name: "a model larger than the benchmark takes", before: "head -c 1048577 /dev/zero > \"$D5_MODEL\"", code: d5list.AuditMissing, words: "larger than the 1048576 bytes"},
		{name: "a model the evaluation cannot load", before: writeModel("crash"), code: d5list.AuditMismatch, words: "cannot load this model"},
		// The portal takes a failure's message of 300 bytes at most.
		{name: "a model the evaluation refuses at length", before: writeModel("crash long"), code: d5list.AuditMismatch, words: "cannot load this model: xxx"},
		{name: "a model scored as NaN", before: writeModel("nan"), code: d5list.AuditNonFinite, words: "NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs := executeEvaluated(t, ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, modelRun(c.before, c.after)), WorkDir: workDir(t)})
			for _, l := range logs {
				a := l.Clock.Audit
				if len(l.Clock.Breaches) != 0 || a == nil || len(a.Sections) != 1 || a.Sections[0].Name != "evaluation" {
					t.Fatalf("run %d: breaches %+v, audit %+v; want no breach and the evaluation's audit", l.Index, l.Clock.Breaches, a)
				}
				if c.code == "" {
					acc := a.Sections[0].Accuracy
					if len(a.Failures) != 0 || acc == nil || *acc != 0.9375 || a.CPUS <= 0 {
						t.Fatalf("run %d: audit %+v (accuracy %v, CPU %v s); want the runner's own accuracy 0.9375 and the CPU it took", l.Index, a, acc, a.CPUS)
					}
					continue
				}
				if len(a.Failures) != 1 || a.Failures[0].Code != c.code || !strings.Contains(a.Failures[0].Message, c.words) || len(a.Failures[0].Message) > maxAuditMessage || a.Sections[0].Accuracy != nil {
					t.Errorf("run %d: audit %+v; want one %s naming %q and no accuracy", l.Index, a, c.code, c.words)
				}
			}
		})
	}
}

// The models a job's runs hand over are kept on the runner's disk, where
// no work area's tmpfs bounds them: together they count against the job's
// disk cap. Each run here hands over a model of 400 007 bytes: under a cap
// of 900 000 both are scored; under one of 600 000 the second would pass
// it, and fails its audit naming the cap, its bytes not kept.
func TestProcessModelsCountAgainstTheJobsDiskCap(t *testing.T) {
	needBwrap(t)
	const model = 400007
	write := "{ printf '0.9375 '; head -c 400000 /dev/zero; } > \"$D5_MODEL\""
	for _, c := range []struct {
		disk   int64
		scored int // how many of the two runs' models are scored
	}{{disk: 900000, scored: 2}, {disk: 600000, scored: 1}} {
		t.Run(strconv.FormatInt(c.disk, 10), func(t *testing.T) {
			work := workDir(t)
			logs := executeEvaluated(t, ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, modelRun(write, "")), WorkDir: work, KeepWork: true,
				RLimits: ResourceLimits{DiskBytes: c.disk}})
			for _, l := range logs {
				a := l.Clock.Audit
				if a == nil || len(a.Sections) != 1 {
					t.Fatalf("run %d: audit %+v; want the evaluation's", l.Index, a)
				}
				if l.Index < c.scored {
					if len(a.Failures) != 0 || a.Sections[0].Accuracy == nil || *a.Sections[0].Accuracy != 0.9375 {
						t.Errorf("run %d: audit %+v; want its model scored 0.9375", l.Index, a)
					}
					continue
				}
				want := fmt.Sprintf("would pass the job's disk cap of %d bytes", c.disk)
				if len(a.Failures) != 1 || a.Failures[0].Code != d5list.AuditMissing || !strings.Contains(a.Failures[0].Message, want) ||
					len(a.Failures[0].Message) > maxAuditMessage || a.Sections[0].Accuracy != nil {
					t.Errorf("run %d: audit %+v; want one %s naming %q and no accuracy", l.Index, a, d5list.AuditMissing, want)
				}
			}
			kept, err := filepath.Glob(filepath.Join(work, "d5job-*", "models", "*"))
			if err != nil || len(kept) != c.scored {
				t.Fatalf("kept models %v (%v); want the %d scored", kept, err, c.scored)
			}
			for _, f := range kept {
				if fi, err := os.Stat(f); err != nil || fi.Size() != model {
					t.Errorf("kept model %s: %v; want %d bytes", f, err, model)
				}
			}
		})
	}
}

// The evaluation's answer for a model is the accuracy field of its line,
// a fraction: only that field being NaN or an infinity, as Python writes
// them, is a non-finite accuracy, whatever else the line says; an
// accuracy outside [0, 1], or a line that is no such answer, is a fault
// of the evaluation.
func TestEvaluationAccuracyReadsTheAccuracyField(t *testing.T) {
	long := `{"accuracy": NaN, "note": "` + strings.Repeat("x", 2000) + `"}`
	cases := []struct {
		line  string
		acc   float64
		code  string // "" for an accuracy the runner takes
		words string
	}{
		{line: `{"accuracy": 0.9375}`, acc: 0.9375},
		{line: `{"accuracy": 0}`, acc: 0},
		{line: `{"accuracy": 1}`, acc: 1},
		{line: `{"accuracy": 0.93, "note": "NaN-free"}`, acc: 0.93},
		{line: `{"Infinity": 2, "accuracy": 0.5}`, acc: 0.5},
		{line: `{"accuracy": 0.5, "loss": NaN, "bound": -Infinity}`, acc: 0.5},
		{line: `{"note": "say \"NaN\"", "accuracy": 0.25}`, acc: 0.25},
		{line: `{"accuracy": NaN}`, code: d5list.AuditNonFinite, words: "as NaN"},
		{line: `{"accuracy": Infinity}`, code: d5list.AuditNonFinite, words: "as Infinity"},
		{line: `{"accuracy":-Infinity, "note": "ok"}`, code: d5list.AuditNonFinite, words: "as -Infinity"},
		{line: long, code: d5list.AuditNonFinite, words: "as NaN"},
		// A string that looks like the runner's own mark is a string.
		{line: `{"accuracy": "d5-non-finite:NaN"}`, code: d5list.AuditMismatch, words: "not {\"accuracy\": A}"},
		{line: `{"accuracy": "NaN"}`, code: d5list.AuditMismatch, words: "not {\"accuracy\": A}"},
		{line: `{"accuracy": null}`, code: d5list.AuditMismatch, words: "not {\"accuracy\": A}"},
		{line: `{"score": 0.5}`, code: d5list.AuditMismatch, words: "not {\"accuracy\": A}"},
		{line: `{"accuracy": NaNa}`, code: d5list.AuditMismatch, words: "not {\"accuracy\": A}"},
		{line: `{"accuracy": 0.5`, code: d5list.AuditMismatch, words: "not {\"accuracy\": A}"},
		{line: `{"accuracy": 93.75}`, code: d5list.AuditMismatch, words: "as 93.75: an accuracy is a fraction, between 0 and 1"},
		{line: `{"accuracy": 1.0001}`, code: d5list.AuditMismatch, words: "as 1.0001"},
		{line: `{"accuracy": -0.5}`, code: d5list.AuditMismatch, words: "as -0.5"},
	}
	for _, c := range cases {
		got := evaluationAccuracy(c.line)
		if c.code == "" {
			if got.fault != nil || got.accuracy != c.acc {
				t.Errorf("%.60s: accuracy %v, fault %+v; want %v", c.line, got.accuracy, got.fault, c.acc)
			}
			continue
		}
		if got.fault == nil || got.fault.Code != c.code || !strings.Contains(got.fault.Message, c.words) || len(got.fault.Message) > maxAuditMessage {
			t.Errorf("%.60s: fault %+v; want %s naming %q, at most %d bytes", c.line, got.fault, c.code, c.words, maxAuditMessage)
		}
	}
}

// The environment tells a run of an evaluated benchmark where its model
// goes, and one with a step audit where its states go, and tells the
// others nothing of them.
func TestRunEnvNamesTheModelOnlyWhereItIsEvaluated(t *testing.T) {
	has := func(spec d5list.JobSpec, want string) bool {
		return slices.Contains(runEnv(spec, sandboxLayout, gpuShare{}, nil), want)
	}
	if !has(evaluationSpec(), "D5_MODEL=/d5/ctl/model") || has(testSpec(1), "D5_MODEL=/d5/ctl/model") {
		t.Errorf("D5_MODEL in an evaluated benchmark's run: %v, in another's: %v; want only the former", has(evaluationSpec(), "D5_MODEL=/d5/ctl/model"), has(testSpec(1), "D5_MODEL=/d5/ctl/model"))
	}
	const states = "D5_STATES=/d5/ctl/states"
	if !has(stepsSpec(), states) || has(evaluationSpec(), states) || has(testSpec(1), states) {
		t.Errorf("D5_STATES in a step-audited benchmark's run: %v, an evaluated one's: %v, another's: %v; want only the first", has(stepsSpec(), states), has(evaluationSpec(), states), has(testSpec(1), states))
	}
}

// staticProgram builds the Go source src into a static binary and returns
// its bytes.
func staticProgram(t *testing.T, src string) []byte {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: the static programs cannot be built")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(goTool, "build", "-o", filepath.Join(dir, "prog"), filepath.Join(dir, "main.go"))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building a static program: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "prog"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A recipe's image is the competitor's: its python3 answers what they
// like. The benchmark's evaluation runs in the runner's own /usr, never in
// the image: here the image's python3 scores every model 1, and the
// runner's finds the 0.5 the model says.
func TestEvaluationNeverRunsInTheRecipesImage(t *testing.T) {
	needBwrap(t)
	entry := staticProgram(t, `package main

import "os"

func main() {
	gate, err := os.Open(os.Getenv("D5_GATE"))
	if err != nil {
		os.Exit(1)
	}
	gate.Read(make([]byte, 64))
	log, err := os.OpenFile(os.Getenv("D5_RESULT_LOG"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		os.Exit(1)
	}
	line := func(key string) {
		log.WriteString(":::MLLOG {\"namespace\": \"\", \"time_ms\": 1000, \"event_type\": \"POINT_IN_TIME\", \"key\": \"" + key + "\", \"value\": null, \"metadata\": {}}\n")
	}
	line("run_start")
	if err := os.WriteFile(os.Getenv("D5_MODEL"), []byte("0.5 weights"), 0); err != nil {
		os.Exit(1)
	}
	line("run_stop")
}
`)
	fakePython := staticProgram(t, `package main

import "fmt"

func main() {
	for range 4 {
		fmt.Println("{\"accuracy\": 1}")
	}
}
`)
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS("testdata/process-bundle")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "code", "entry"), entry, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := imageArchive(t, []string{"PATH=/usr/bin"}, []layerEntry{
		{name: "usr/", typ: tar.TypeDir, mode: 0o755}, {name: "usr/bin/", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/bin/python3", body: string(fakePython), mode: 0o755}})
	p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fetchOf(withImage(t, dir, archive)), WorkDir: workDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	spec := evaluationSpec()
	spec.Recipe = d5list.Recipe{Entrypoint: "code/entry", Image: "code/image.tar"}
	logs, err := p.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		a := l.Clock.Audit
		if a == nil || len(a.Failures) != 0 || a.Sections[0].Accuracy == nil || *a.Sections[0].Accuracy != 0.5 {
			t.Fatalf("run %d: audit %+v; want the runner's own python3 to score the model 0.5", l.Index, a)
		}
	}
}

// executeEvaluated runs the two-run evaluated job of evaluationSpec on a
// process executor made with opts, and returns its two runs' logs.
func executeEvaluated(t *testing.T, opts ProcessOptions) []d5list.RunLog {
	t.Helper()
	p, err := NewProcess(opts)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), evaluationSpec())
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 2 {
		t.Fatalf("%d logs, want 2", len(logs))
	}
	return logs
}
