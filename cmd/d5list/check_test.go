package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
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
	dir := t.TempDir()
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
