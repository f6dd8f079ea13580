package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/verifier"
)

const deep500Recipes = "../../../shared/peer-data/deep500-recipes/"

// `d5list check` on a recipe Deep500 publishes prints what it read, in
// Python notation, without running Python.
func TestCheckPrintsAPublishedRecipe(t *testing.T) {
	path := filepath.Join(deep500Recipes, "cifar10_resnet44.py")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("the published recipes are not beside the repository: %v", err)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"check", path}, &out, &errOut); err != nil {
		t.Fatalf("check: %v\n%s%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{
		"FIXED\n  dataset: \"cifar10\"\n  epochs: 90\n  model: \"resnet\"\n  model_kwargs: {\"depth\": 44}\nMUTABLE\n",
		"  optimizer_args: [0.1, 0.9]\n",
		"  optimizer_kwargs: {\"gradient_modifier\": weight_decay}\n",
		"  events: [d5.training_events.EpochHPSchedule(lr=[[0, 0.1], [81, 0.01], [122, 0.001], [164, 0.0001]]), d5.training_events.TerminalBarEvent()]\n",
		"  train_sampler_kwargs: {\"transformations\": [d5ref.Crop([32, 32], padding=[4, 4], random_crop=True), d5ref.RandomFlip(), d5ref.Cutout(1, 16)]}\n",
		"METRICS\n  test_accuracy(max_acc=True) >= 93\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := run(context.Background(), []string{"check", "--json", path}, &out, &errOut); err != nil {
		t.Fatalf("check --json: %v", err)
	}
	var got struct {
		OK     bool          `json:"ok"`
		Recipe d5list.Recipe `json:"recipe"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || !got.OK || got.Recipe.Fixed["dataset"] != "cifar10" || len(got.Recipe.Metrics) != 1 {
		t.Fatalf("check --json: %v %+v\n%s", err, got, out.String())
	}
}

// A recipe that changes a section after assigning it is refused with the
// file and line, and check exits non-zero.
func TestCheckRecipeNamesTheLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recipe.py")
	src := "FIXED = {'epochs': 90}\nMUTABLE = {}\nMETRICS = []\nFIXED['epochs'] = 1\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"check", path}, &out, &errOut)
	if err != errSilent || !strings.Contains(out.String(), path+":4: ") || !strings.Contains(out.String(), "FIXED is changed here") {
		t.Fatalf("check: %v\n%s%s", err, out.String(), errOut.String())
	}
}

func TestErrorLineNamesTheProgramOnce(t *testing.T) {
	for _, err := range []error{
		d5list.Errorf(d5list.EINVALID, "bad folder"),
		fmt.Errorf("wrapped: %w", d5list.Errorf(d5list.ENOTFOUND, "x")),
		errors.New("plain"),
	} {
		line := errorLine(err)
		if !strings.HasPrefix(line, "d5list: ") || strings.Count(line, "d5list:") != 1 {
			t.Errorf("%q", line)
		}
	}
}

// --json always works: a folder whose score is invalid (two runs never
// stopped) prints a null score with the reason, and exits non-zero.
func TestCheckMLPerfJSONWithAnInvalidScore(t *testing.T) {
	src := "../../../shared/peer-data/mlperf/v4.0-asustek-resnet"
	files, _ := filepath.Glob(filepath.Join(src, "result_*.txt"))
	if len(files) == 0 {
		t.Skip("shared/peer-data not beside the repository")
	}
	dir := filepath.Join(t.TempDir(), "v4.0-asustek-resnet") // the round is in the name, as where it was published
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 { // no run_stop: the run never ended
			var kept []string
			for _, l := range strings.Split(string(data), "\n") {
				if !strings.Contains(l, `"key": "run_stop"`) {
					kept = append(kept, l)
				}
			}
			data = []byte(strings.Join(kept, "\n"))
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"check", "--mlperf", "--json", dir}, &out, io.Discard)
	var rep struct {
		Score struct {
			Value *float64 `json:"value"`
			Valid bool     `json:"valid"`
			Note  string   `json:"note"`
		} `json:"score"`
		Reasons []d5list.Reason `json:"reasons"`
	}
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
		t.Fatalf("output is not JSON (%v): %q", jerr, out.String())
	}
	if rep.Score.Valid || rep.Score.Value != nil || rep.Score.Note == "" || len(rep.Reasons) == 0 {
		t.Fatalf("score %+v reasons %+v, want null, invalid, with a reason", rep.Score, rep.Reasons)
	}
	if err == nil {
		t.Fatal("exit 0 for an invalid score")
	}
}

// The portal answers an uploaded MLPerf folder exactly as check --mlperf
// answers the folder on disk: a published folder (accepted, its score),
// the same folder one run short (refused, the run count named), and a
// whole submission tree (v5.0 AMD).
func TestPortalChecksMLPerfAsTheCLIDoes(t *testing.T) {
	src := "../../../shared/peer-data/mlperf-rounds/v4.1-cisco-ssd"
	if _, err := os.Stat(src); err != nil {
		t.Skip("shared/peer-data not beside the repository")
	}
	p := startPortal(t, 0)
	short := filepath.Join(t.TempDir(), "v4.1-cisco-ssd")
	if err := os.MkdirAll(short, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(src, "*"))
	for _, f := range files {
		if filepath.Base(f) == "result_4.txt" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(short, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		dir, wrapper, round string
		accepted            bool
	}{
		{src, "v4.1-cisco-ssd", "4.1", true},
		{short, "v4.1-cisco-ssd", "4.1", false},
		{filepath.Join(mlperfTestdata, "v5.0", "AMD"), "AMD", "5.0", treeAccepted(t, "v5.0.json", "AMD")},
	} {
		var cli bytes.Buffer
		err := run(context.Background(), []string{"check", "--mlperf", "--json", "--round", c.round, c.dir}, &cli, io.Discard)
		if (err == nil) != c.accepted {
			t.Fatalf("%s: check exit %v, want accepted %v", c.dir, err, c.accepted)
		}
		archive := tarGzFolder(t, c.dir, c.wrapper)
		req, _ := http.NewRequest(http.MethodPost, p.url+"/api/v1/mlperf/check?round="+c.round, bytes.NewReader(archive))
		req.Header.Set("Content-Type", "application/gzip")
		req.Header.Set("Authorization", "Bearer "+p.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		web, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", c.dir, resp.StatusCode, web)
		}
		var fromCLI, fromWeb map[string]any
		if err := json.Unmarshal(cli.Bytes(), &fromCLI); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(web, &fromWeb); err != nil {
			t.Fatal(err)
		}
		if fromWeb["accepted"] != c.accepted {
			t.Errorf("%s: the portal says accepted=%v", c.dir, fromWeb["accepted"])
		}
		// The same report but for where the folder lay: a path on disk for
		// the command line, the upload for the portal.
		for _, rep := range []map[string]any{fromCLI, fromWeb} {
			for _, r := range rep["reasons"].([]any) {
				if file := fmt.Sprint(r.(map[string]any)["file"]); file != "system.json" && !strings.HasPrefix(file, "result_") && !strings.HasPrefix(file, "results/") && !strings.HasPrefix(file, "systems/") {
					r.(map[string]any)["file"] = "(the folder)"
				}
			}
		}
		a, _ := json.Marshal(fromCLI)
		b, _ := json.Marshal(fromWeb)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the portal and the command line differ:\n cli %s\n web %s", c.dir, a, b)
		}
	}
}

// tarGzFolder packs the files under dir into a .tar.gz, inside a folder
// named wrapper, as `tar czf x.tar.gz wrapper` would.
func tarGzFolder(t *testing.T, dir, wrapper string) []byte {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[wrapper+"/"+filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tarGz(t, files)
}

func dirExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

const (
	mlperfTestdata = "../../verifier/testdata/mlperf"
	sharedRounds   = "../../../shared/peer-data/mlperf-rounds"
)

// recordedMLPerf is what MLCommons' own tools said of a folder, as
// verifier/testdata/mlperf/recorded holds it (its README says how it was
// recorded): the package checker's outcome on the benchmark folder with
// its system description, its RCP message, each file's compliance and
// the result summarizer's score.
type recordedMLPerf struct {
	Outcome string   `json:"outcome"`
	Errors  []string `json:"errors"`
	RCP     *string  `json:"rcp"`
	Minutes *float64 `json:"minutes"`
	Files   map[string]struct {
		Valid bool `json:"valid"`
	} `json:"files"`
}

func loadRecordedMLPerf(t *testing.T, name string) map[string]struct {
	Benchmarks map[string]recordedMLPerf `json:"benchmarks"`
} {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mlperfTestdata, "recorded", name))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]struct {
		Benchmarks map[string]recordedMLPerf `json:"benchmarks"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// treeAccepted is MLCommons' package checker's recorded verdict on a
// whole tree.
func treeAccepted(t *testing.T, file, tree string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mlperfTestdata, "recorded", file))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]struct {
		PackageChecker struct {
			Outcome string `json:"outcome"`
		} `json:"package_checker"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec[tree].PackageChecker.Outcome == "accepted"
}

func sameMinutes(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return strconv.FormatFloat(*a, 'g', 3, 64) == strconv.FormatFloat(*b, 'g', 3, 64)
}

// TestCheckMLPerfEveryPublishedFolder runs `d5list check --mlperf --rules
// today --json` over every published folder in shared/peer-data (eight rounds, a dozen
// benchmarks) and asserts what MLCommons' own tools said of the same
// files: the package checker's verdict (exit status 0 for accepted), its
// RCP message, the files the compliance checker fails, and the score the
// result summarizer publishes, to 3 significant digits.
func TestCheckMLPerfEveryPublishedFolder(t *testing.T) {
	if !dirExists(sharedRounds) {
		t.Skip("shared/peer-data not beside the repository")
	}
	rec := loadRecordedMLPerf(t, "shared.json")
	folders, _ := filepath.Glob(filepath.Join(sharedRounds, "v*"))
	more, _ := filepath.Glob("../../../shared/peer-data/mlperf/v*")
	for _, dir := range append(folders, more...) {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			tree, ok := rec[name]
			if !ok || len(tree.Benchmarks) != 1 {
				t.Fatalf("no recorded verdict for %s", name)
			}
			var want recordedMLPerf
			for _, b := range tree.Benchmarks {
				want = b
			}
			var out bytes.Buffer
			// The verdicts were recorded with today's tools (mlcommons/logging at 7bbf792).
			err := run(context.Background(), []string{"check", "--mlperf", "--rules", "today", "--json", dir}, &out, io.Discard)
			var rep struct {
				Accepted bool     `json:"accepted"`
				Minutes  *float64 `json:"minutes"`
				RCP      *struct {
					Message string `json:"message"`
				} `json:"rcp"`
				Runs []struct {
					File      string `json:"file"`
					Compliant bool   `json:"compliant"`
				} `json:"runs"`
				Reasons []d5list.Reason `json:"reasons"`
			}
			if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
				t.Fatalf("not JSON (%v): %s", jerr, out.String())
			}
			if rep.Accepted != (want.Outcome == "accepted") || (err == nil) != rep.Accepted {
				t.Errorf("accepted %v (exit %v), reasons %v; MLCommons' package checker: %s %v", rep.Accepted, err, rep.Reasons, want.Outcome, want.Errors)
			}
			for _, r := range rep.Runs {
				if f, ok := want.Files[r.File]; !ok || f.Valid != r.Compliant {
					t.Errorf("%s: compliant %v; MLCommons' compliance checker: %v", r.File, r.Compliant, f.Valid)
				}
			}
			if want.RCP != nil && (rep.RCP == nil || rep.RCP.Message != *want.RCP) {
				t.Errorf("RCP %+v; MLCommons' RCP checker: %q", rep.RCP, *want.RCP)
			}
			if !sameMinutes(rep.Minutes, want.Minutes) {
				t.Errorf("score %v minutes; MLCommons' result summarizer: %v", rep.Minutes, want.Minutes)
			}
		})
	}
}

// A whole organisation's submission tree of a real round (v5.0 AMD: two
// systems, llama2_70b_lora on each) is checked as one: each system
// description, each benchmark folder and the summary table, in text and
// in JSON, with MLCommons' recorded verdicts.
func TestCheckMLPerfTree(t *testing.T) {
	tree := filepath.Join(mlperfTestdata, "v5.0", "AMD")
	rec := loadRecordedMLPerf(t, "v5.0.json")["AMD"]
	var text bytes.Buffer
	err := run(context.Background(), []string{"check", "--mlperf", tree}, &text, io.Discard)
	for _, want := range []string{"MLPerf Training 5.0 (rules 5.0.0), submission tree AMD", "summary, minutes:", "llama2_70b_lora"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, text.String())
		}
	}
	var out bytes.Buffer
	jerr := run(context.Background(), []string{"check", "--mlperf", "--json", tree}, &out, io.Discard)
	var rep struct {
		Accepted   bool `json:"accepted"`
		Benchmarks []struct {
			System    string   `json:"system"`
			Benchmark string   `json:"benchmark"`
			Accepted  bool     `json:"accepted"`
			Minutes   *float64 `json:"minutes"`
		} `json:"benchmarks"`
		Summary []struct {
			System string              `json:"system"`
			Scores map[string]*float64 `json:"scores"`
		} `json:"summary"`
	}
	if e := json.Unmarshal(out.Bytes(), &rep); e != nil {
		t.Fatalf("not JSON (%v): %s", e, out.String())
	}
	if (err == nil) != rep.Accepted || (jerr == nil) != rep.Accepted {
		t.Errorf("exit %v and %v for accepted %v", err, jerr, rep.Accepted)
	}
	if len(rep.Benchmarks) != len(rec.Benchmarks) || len(rep.Summary) != 2 {
		t.Fatalf("%d benchmark folders and %d summary rows; the tree has %d and 2 systems", len(rep.Benchmarks), len(rep.Summary), len(rec.Benchmarks))
	}
	for _, b := range rep.Benchmarks {
		want := rec.Benchmarks[b.System+"/"+b.Benchmark]
		if b.Accepted != (want.Outcome == "accepted") || !sameMinutes(b.Minutes, want.Minutes) {
			t.Errorf("%s/%s: accepted %v, %v minutes; MLCommons: %s, %v minutes", b.System, b.Benchmark, b.Accepted, b.Minutes, want.Outcome, want.Minutes)
		}
		for _, row := range rep.Summary {
			if row.System == b.System && !sameMinutes(row.Scores[b.Benchmark], b.Minutes) {
				t.Errorf("summary %s: %v minutes, the folder's %v", row.System, row.Scores[b.Benchmark], b.Minutes)
			}
		}
	}
}

// A published tree on which MLCommons' result summarizer stops (v0.6
// Google: it scores the mask folder, which the package checker skips, and
// finds no rules file for it) gets no summary table, as MLCommons
// publishes none, and a warning that says why.
func TestCheckMLPerfTreeTheSummarizerStopsOn(t *testing.T) {
	tree := filepath.Join(mlperfTestdata, "v0.6", "Google")
	var text bytes.Buffer
	_ = run(context.Background(), []string{"check", "--mlperf", tree}, &text, io.Discard)
	for _, want := range []string{"summary: none, as MLCommons' result summarizer publishes none for this tree", "results/tpu-v3-32/mask: mlperf_checker_stops: MLCommons' result summarizer scores"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, text.String())
		}
	}
	var out bytes.Buffer
	_ = run(context.Background(), []string{"check", "--mlperf", "--json", tree}, &out, io.Discard)
	var rep struct {
		Summary  []json.RawMessage `json:"summary"`
		Warnings []d5list.Reason   `json:"warnings"`
	}
	if e := json.Unmarshal(out.Bytes(), &rep); e != nil {
		t.Fatalf("not JSON (%v): %s", e, out.String())
	}
	stops := slices.IndexFunc(rep.Warnings, func(r d5list.Reason) bool { return r.Code == verifier.CodeMLPerfStops })
	if rep.Summary == nil || len(rep.Summary) != 0 || stops < 0 {
		t.Errorf("summary %s, warnings %v; want an empty summary and the summarizer's stop", rep.Summary, rep.Warnings)
	}
}

// --json is always JSON: where the path is neither a result folder nor a
// submission tree, an error object in the portal API's shape, and a
// non-zero exit.
func TestCheckMLPerfJSONError(t *testing.T) {
	empty := t.TempDir()
	for _, path := range []string{empty, filepath.Join(empty, "missing"), filepath.Join(mlperfTestdata, "v5.0")} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"check", "--mlperf", "--json", path}, &out, io.Discard)
		var got struct {
			Error *struct {
				Code    string          `json:"code"`
				Message string          `json:"message"`
				Reasons []d5list.Reason `json:"reasons"`
			} `json:"error"`
		}
		if jerr := json.Unmarshal(out.Bytes(), &got); jerr != nil || got.Error == nil || got.Error.Message == "" || got.Error.Code == "" || got.Error.Reasons == nil {
			t.Errorf("%s: stdout %q (%v)", path, out.String(), jerr)
		}
		if err == nil {
			t.Errorf("%s: exit 0", path)
		}
	}
}

// What a portal killed during an upload left in its scratch folder is gone
// once it serves again.
func TestServeEmptiesItsScratchFolder(t *testing.T) {
	data := t.TempDir()
	stale := filepath.Join(data, "scratch", "d5list-folder-123", "submission")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "big.bin"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	startPortalIn(t, data, 0)
	ents, err := os.ReadDir(filepath.Join(data, "scratch"))
	if err != nil || len(ents) != 0 {
		t.Fatalf("scratch folder after start: %v %v", ents, err)
	}
}
