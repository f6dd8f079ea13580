package verifier

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// Each round is judged by default by its own release of mlcommons/logging,
// which accepted published folders that today's tools refuse; --rules
// today refuses them as today's do. Each case is a real published tree
// and one of the rules MLCommons changed after the round was judged.
func TestCheckMLPerfByTheRoundsOwnRules(t *testing.T) {
	for _, c := range []struct {
		tree, folder, release string
		today                 string // what today's rules say of the folder
		atRelease             string // a warning the release gives instead, if any
	}{
		// 1.1.0-rc4 only warned where the weights initialisation check failed.
		{"v1.1/Dell", "results/XE8545x4A100-SXM-80GB/minigo", "1.1.0-rc4", "10 files do not comply", weightsInitWarning},
		// 2.1.0's closed_bert.yaml required opt_epsilon, renamed later.
		{"v2.1/NVIDIA", "results/dgxa100_ngc22.09_pytorch/bert", "2.1.0", "10 files do not comply", ""},
		// The seed checker of 1.0 to 4.0 passed a folder that logs no seed.
		{"v2.1/ASUSTeK", "results/ESC8000A-E11-8xA100-PCIE-80GB-NVBridge/minigo", "2.1.0", "logs no seed.", ""},
		{"v3.1/GigaComputing", "results/G593-ZD2_hugectr/dlrm_dcnv2", "3.1.0-rc3", "logs no seed.", ""},
		// 4.0's system description checker took the status "available".
		{"v4.0/GigaComputing", "", "4.0.0-rc3-rcp-prunning", "Field status contains a non valid value", ""},
	} {
		t.Run(c.tree, func(t *testing.T) {
			dir := filepath.Join(mlperfTestdata, c.tree)
			today, err := CheckMLPerfTreeRules(dir, "", RulesToday)
			if err != nil {
				t.Fatal(err)
			}
			own, err := CheckMLPerfTree(dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if today.Accepted || !strings.Contains(today.Rules, "today's mlcommons/logging (7bbf792)") {
				t.Errorf("today's rules (%s): accepted %v", today.Rules, today.Accepted)
			}
			if !own.Accepted || own.Rules != "mlcommons/logging "+c.release+", the round's own release" {
				t.Errorf("the round's rules (%s): accepted %v, reasons %v", own.Rules, own.Accepted, own.Reasons)
			}
			says := func(rep *MLPerfTreeReport, what string, warnings bool) bool {
				for _, s := range rep.Systems {
					if slices.ContainsFunc(s.Reasons, func(r d5list.Reason) bool { return strings.Contains(r.Message, what) }) {
						return true
					}
				}
				for _, b := range rep.Benchmarks {
					if c.folder != "" && b.Folder != c.folder {
						continue
					}
					list := b.Reasons
					for _, run := range b.Runs {
						list = append(list, run.Problems...)
						if warnings {
							list = append(list, run.Warnings...)
						}
					}
					if warnings {
						list = append(list, b.Warnings...)
					}
					if slices.ContainsFunc(list, func(r d5list.Reason) bool { return strings.Contains(r.Message, what) }) {
						return true
					}
				}
				return false
			}
			if !says(today, c.today, false) {
				t.Errorf("today's rules do not say %q", c.today)
			}
			if c.atRelease != "" && !says(own, c.atRelease, true) {
				t.Errorf("the round's rules do not warn %q", c.atRelease)
			}
			for _, b := range own.Benchmarks {
				if b.Minutes == nil {
					t.Errorf("%s: no score by the round's rules: %s", b.Folder, b.Score.Note)
				}
			}
		})
	}
}

// The seed checker of rounds 1.0 to 4.0 fails a file without a seed only
// after one with a seed, in the order it reads them; today's fails every
// file without one.
func TestCheckMLPerfOptionalSeeds(t *testing.T) {
	src := filepath.Join(peer, "v4.0-asustek-resnet")
	if _, err := os.Stat(src); err != nil {
		t.Skip("peer data not available")
	}
	for _, c := range []struct {
		unseeded  []string
		accepted  bool
		atRelease string
	}{
		{[]string{"result_1.txt", "result_2.txt", "result_3.txt", "result_4.txt", "result_5.txt"}, true, ""},
		{[]string{"result_1.txt"}, true, ""}, // read first: no seed before it
		{[]string{"result_3.txt"}, false, "Result file result_3.txt logs no seed. However, other result files, including result_1.txt, result_2.txt, already logs some seeds."},
	} {
		dir := filepath.Join(t.TempDir(), "v4.0-asustek-resnet")
		copyDir(t, src, dir)
		for _, f := range c.unseeded {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, l := range strings.Split(string(data), "\n") {
				if !strings.Contains(l, `"key": "seed"`) {
					kept = append(kept, l)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		own, err := CheckMLPerfRound(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		today, err := CheckMLPerfRoundRules(dir, "", RulesToday)
		if err != nil {
			t.Fatal(err)
		}
		if own.Accepted != c.accepted || today.Accepted {
			t.Errorf("%v without seeds: accepted %v by 4.0's rules (%v), %v by today's", c.unseeded, own.Accepted, own.Reasons, today.Accepted)
		}
		if c.atRelease != "" && !slices.ContainsFunc(own.Reasons, func(r d5list.Reason) bool { return r.Message == c.atRelease }) {
			t.Errorf("%v without seeds: reasons %v, want %q", c.unseeded, own.Reasons, c.atRelease)
		}
	}
}

// A round file's at_release is checked when the release's rules load: a
// rename of a key its rules file lacks is named with the file.
func TestMLPerfReleaseRulesData(t *testing.T) {
	const round = "ruleset: 9.0.0\nround: \"9.0\"\nformat: mllog\nrelease: \"9.0.0\"\nbenchmarks:\n  x: {runs: 5}\nconfigs:\n  common:\n    keys:\n      - {key: seed, req: exactly_one}\n"
	bad := round + "at_release:\n  rename_keys:\n    - {config: common, from: opt_epsilon, to: eps}\n"
	if _, err := parseMLPerfRoundRules("training_9.0.0.yaml", []byte(bad), RulesRelease); err == nil || !strings.Contains(err.Error(), "training_9.0.0.yaml: at_release renames opt_epsilon in common, which has no such key") {
		t.Errorf("a rename of a missing key: %v", err)
	}
	good := round + "at_release:\n  rename_keys:\n    - {config: common, from: seed, to: random_seed}\n"
	r, err := parseMLPerfRoundRules("training_9.0.0.yaml", []byte(good), RulesRelease)
	if err != nil || r.Configs["common"].byKey["random_seed"] == nil || r.Configs["common"].byKey["seed"] != nil {
		t.Errorf("the release's rules: %v", err)
	}
	if r, err := parseMLPerfRoundRules("training_9.0.0.yaml", []byte(good), RulesToday); err != nil || r.Configs["common"].byKey["seed"] == nil {
		t.Errorf("today's rules: %v", err)
	}
	for _, name := range MLPerfRoundNames() {
		if _, err := loadMLPerfRoundRules(name, RulesRelease); err != nil {
			t.Errorf("round %s by its release's rules: %v", name, err)
		}
	}
}

// releaseGaps are the trees on which d5list's default (the round's own
// release) may disagree with that release's package checker, each with
// why: what of the tag is not yet transcribed. None is left; the test
// fails if a listed tree agrees, so that the list only shrinks.
var releaseGaps = map[string]string{}

// TestCheckMLPerfReleaseVerdicts compares d5list's default verdict on
// every published tree with what its round's own release of
// mlcommons/logging said (recorded/release.json), tree by tree.
func TestCheckMLPerfReleaseVerdicts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(mlperfTestdata, "recorded", "release.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw, "_about")
	rec := map[string]struct {
		Tag     string   `json:"tag"`
		Outcome string   `json:"outcome"`
		Errors  []string `json:"errors"`
	}{}
	for tree, r := range raw {
		v := rec[tree]
		if err := json.Unmarshal(r, &v); err != nil {
			t.Fatalf("%s: %v", tree, err)
		}
		rec[tree] = v
	}
	compared := 0
	for tree, want := range rec {
		if want.Outcome == "stopped" {
			continue // round 3.1, whose tagged checker stops on every tree
		}
		rep, err := CheckMLPerfTree(filepath.Join(mlperfTestdata, tree), "")
		if err != nil {
			t.Errorf("%s: %v", tree, err)
			continue
		}
		compared++
		if !strings.HasPrefix(rep.Rules, "mlcommons/logging "+want.Tag+",") {
			t.Errorf("%s: judged by %s, recorded with %s", tree, rep.Rules, want.Tag)
		}
		agrees := rep.Accepted == (want.Outcome == "accepted")
		switch gap, known := releaseGaps[tree]; {
		case known && agrees:
			t.Errorf("%s: now agrees with %s (%s): take it off releaseGaps", tree, want.Tag, want.Outcome)
		case !known && !agrees:
			t.Errorf("%s: accepted %v; %s's package checker: %s %v", tree, rep.Accepted, want.Tag, want.Outcome, want.Errors)
		case known:
			t.Logf("%s: a known gap: %s", tree, gap)
		}
	}
	if compared < 60 {
		t.Errorf("compared %d trees; release.json records more", compared)
	}
}

// folder is the benchmark folder (<system>/<benchmark>) a disagreement is
// of, for a file's too; "" for the tree, a system description or the
// summary.
func (d disagreement) folder() string {
	parts := strings.Split(d.Subject, "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// releaseStopped are the rounds whose own release stops on every tree
// here, so that there is no verdict or score of it to compare with.
var releaseStopped = map[string]string{
	"3.1": "3.1.0-rc3's compliance checker stops on every result file: it reads common.yaml's AT_LEAST_ONE_OR(...) as AT_LEAST(n) (ValueError: invalid literal for int() with base 10: 'ON')",
}

// releaseFolderGaps are the places ("v<round>/<Org>: <subject>", the
// subject as compareWithRecorded names it) where d5list's default, the
// round's own release, may disagree with what that release's tools
// recorded (recorded/release/v<round>.json), each with why. The test
// fails if a listed place agrees, so that the list only shrinks.
var releaseFolderGaps = map[string]string{}

// TestCheckMLPerfReleaseFolders compares d5list's default (the round's
// own release of mlcommons/logging) with what that release's tools said
// of every published tree (recorded/release/v<round>.json by record.py):
// the tree's verdict, each system description, each benchmark folder's
// verdict alone, its RCP message and score, each file's compliance, and
// the result summarizer's rows.
func TestCheckMLPerfReleaseFolders(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(mlperfTestdata, "recorded", "release", "v*.json"))
	if len(files) < 11 {
		t.Fatalf("%d release recordings; want one for each round with a release (0.7 to 5.1)", len(files))
	}
	gapSeen := map[string]bool{}
	folders, agreeing, scores := 0, 0, 0
	for _, f := range files {
		name := filepath.Base(f)
		round := strings.TrimSuffix(strings.TrimPrefix(name, "v"), ".json")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]struct {
			recordedTree
			Tag string `json:"tag"`
		}
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for org, want := range rec {
			tree := "v" + round + "/" + org
			t.Run(tree, func(t *testing.T) {
				if why, ok := releaseStopped[round]; ok {
					if want.PackageChecker.Outcome != "stopped" {
						t.Errorf("%s's package checker no longer stops (%s): compare it (%s)", want.Tag, want.PackageChecker.Outcome, why)
					}
					for key, b := range want.Benchmarks {
						if b.Outcome != "stopped" {
							t.Errorf("%s: %s's package checker no longer stops (%s)", key, want.Tag, b.Outcome)
						}
					}
					t.Logf("not compared: %s", why)
					return
				}
				rep, diffs, err := compareWithRecorded(filepath.Join(mlperfTestdata, tree), round, RulesRelease, want.recordedTree)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(rep.Rules, "mlcommons/logging "+want.Tag+",") {
					t.Errorf("judged by %s, recorded with %s", rep.Rules, want.Tag)
				}
				differs := map[string]bool{}
				for _, d := range diffs {
					key := tree + ": " + d.Subject
					differs[d.folder()] = true
					if gap, ok := releaseFolderGaps[key]; ok {
						gapSeen[key] = true
						t.Logf("a known gap: %s (%s)", d, gap)
						continue
					}
					t.Errorf("%s (by %s)", d, want.Tag)
				}
				for _, b := range rep.Benchmarks {
					folders++
					if !differs[b.System+"/"+b.Benchmark] {
						agreeing++
						if b.Minutes != nil {
							scores++
						}
					}
				}
			})
		}
	}
	for key, gap := range releaseFolderGaps {
		if !gapSeen[key] {
			t.Errorf("%s now agrees with its release (%s): take it off releaseFolderGaps", key, gap)
		}
	}
	t.Logf("%d of %d benchmark folders agree with their round's release in verdict, RCP, score and every file; %d of them scored", agreeing, folders, scores)
	if folders < 80 {
		t.Errorf("compared %d benchmark folders; the release recordings hold more", folders)
	}
}

// MLCommons' result summarizer scores a folder whatever the package
// checker says of it; the summary keeps that score and names the folder's
// benchmark as refused, so that it never reads as a compliant result.
func TestSummaryMarksTheScoresOfRefusedFolders(t *testing.T) {
	rep, err := CheckMLPerfTree(filepath.Join(mlperfTestdata, "v1.0", "Graphcore"), "")
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]bool{}
	for _, b := range rep.Benchmarks {
		if !b.Accepted && b.Minutes != nil {
			refused[b.System+"/"+b.Benchmark] = true
		}
	}
	if len(refused) != 1 || !refused["ipu-pod64-POPART-closed/bert"] {
		t.Fatalf("refused folders with a score: %v, want ipu-pod64-POPART-closed/bert (1.0.0's RCP check)", refused)
	}
	for _, row := range rep.Summary {
		for bench, m := range row.Scores {
			marked := slices.Contains(row.Refused, bench)
			if marked != refused[row.System+"/"+bench] || (marked && m == nil) {
				t.Errorf("%s %s: score %v, marked refused %v", row.System, bench, m, marked)
			}
		}
	}
}

// The RCP checkers of 1.0.0 to 2.1.0 kept the global_batch_size of the
// last file glob listed, where today's stops on files that differ (two
// published Dell folders of rounds 2.0 and 2.1 log two batch sizes). So
// by the release's rules a batch size edited in the last listed file is
// the folder's, and one edited in any other file changes nothing.
func TestReleaseRCPTakesTheLastListedFilesBatchSize(t *testing.T) {
	src := filepath.Join(mlperfTestdata, "v2.1", "Intel-HabanaLabs", "results", "HLS-Gaudi2-PT", "resnet")
	unedited, err := CheckMLPerfRound(src, "2.1")
	if err != nil || unedited.RCP == nil || !unedited.RCP.Passed {
		t.Fatalf("the published folder: %v %+v", err, unedited)
	}
	for _, editLast := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "resnet")
		copyDir(t, src, dir)
		// Only result files, so that one of them is listed last whatever
		// order the file system lists them in (scaling.json weighs only
		// on the score).
		if err := os.Remove(filepath.Join(dir, "scaling.json")); err != nil {
			t.Fatal(err)
		}
		listed := listingOrder(dir)
		target := ""
		for name, at := range listed {
			isLast := at == len(listed)-1
			if strings.HasPrefix(name, "result_") && isLast == editLast && (target == "" || name < target) {
				target = name
			}
		}
		if target == "" {
			t.Fatalf("no result file to edit among %v", listed)
		}
		path := filepath.Join(dir, target)
		data, _ := os.ReadFile(path)
		edited := strings.Replace(string(data), `"key": "global_batch_size", "value": 2048`, `"key": "global_batch_size", "value": 999424`, 1)
		if edited == string(data) {
			t.Fatal("no global_batch_size of 2048 to edit")
		}
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		today, err := CheckMLPerfRoundRules(dir, "2.1", RulesToday)
		if err != nil || today.Accepted || !slices.ContainsFunc(today.Reasons, func(r d5list.Reason) bool {
			return strings.Contains(r.Message, "different global batch sizes")
		}) {
			t.Errorf("today's rules, %s edited: %v %+v", target, err, today.Reasons)
		}
		own, err := CheckMLPerfRound(dir, "2.1")
		if err != nil || own.RCP == nil {
			t.Fatalf("the release's rules, %s edited: %v", target, err)
		}
		want := unedited.RCP.Message
		if editLast {
			want = "Missing RCP, please submit RCP with BS = 999424"
		}
		if own.RCP.Message != want {
			t.Errorf("the release's rules, %s edited (last listed: %v): RCP %q, want %q", target, editLast, own.RCP.Message, want)
		}
	}
}
