package verifier

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

const peer = "../../shared/peer-data/mlperf"

// publishedVerdicts parses MLPerf's compliance_result.out: the verdict that
// follows each "Running compliance on file: .../result_<i>.txt".
func publishedVerdicts(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("peer data not available: %v", err)
	}
	out := map[string]string{}
	file := ""
	for _, l := range strings.Split(string(data), "\n") {
		if i := strings.Index(l, "Running compliance on file: "); i >= 0 {
			file = filepath.Base(strings.TrimSpace(l[i+len("Running compliance on file: "):]))
			continue
		}
		for _, v := range []string{"SUCCESS", "FAILED"} {
			if strings.HasSuffix(strings.TrimSpace(l), "- "+v) && file != "" {
				out[file] = v
				file = ""
			}
		}
	}
	return out
}

var reTimeMS = regexp.MustCompile(`"time_ms": (\d+)`)

// rawSeconds reads run_stop - run_start of a log with plain string search.
func rawSeconds(t *testing.T, path string) (float64, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var start, stop int64
	status := ""
	for _, l := range strings.Split(string(data), "\n") {
		m := reTimeMS.FindStringSubmatch(l)
		switch {
		case strings.Contains(l, `"key": "run_start"`):
			start, _ = strconv.ParseInt(m[1], 10, 64)
		case strings.Contains(l, `"key": "run_stop"`):
			stop, _ = strconv.ParseInt(m[1], 10, 64)
			status = regexp.MustCompile(`"status": "(\w+)"`).FindStringSubmatch(l)[1]
		}
	}
	return float64(stop-start) / 1000, status
}

func TestCheckMLPerfASUSTeK(t *testing.T) {
	dir := filepath.Join(peer, "v4.0-asustek-resnet")
	published := publishedVerdicts(t, filepath.Join(dir, "compliance_result.out"))
	if len(published) != 5 {
		t.Fatalf("compliance_result.out gives %d verdicts, want 5", len(published))
	}
	rep, err := CheckMLPerf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Benchmark != "resnet" || rep.Target != 0.759 || len(rep.Runs) != 5 {
		t.Fatalf("report %s %v with %d runs", rep.Benchmark, rep.Target, len(rep.Runs))
	}
	var converged []float64
	for _, r := range rep.Runs {
		verdict := "SUCCESS"
		if len(r.Problems) > 0 || !r.Converged {
			verdict = "FAILED"
		}
		if verdict != published[r.File] {
			t.Errorf("%s: %s, MLPerf's checker said %s (problems %v)", r.File, verdict, published[r.File], r.Problems)
		}
		secs, status := rawSeconds(t, filepath.Join(dir, r.File))
		if r.Seconds != secs || r.Status != status || r.Seed == 0 {
			t.Errorf("%s: %v s %q seed %d, want %v s %q", r.File, r.Seconds, r.Status, r.Seed, secs, status)
		}
		if status == "success" {
			converged = append(converged, secs)
		}
	}
	if published["result_3.txt"] != "FAILED" {
		t.Fatalf("published verdict of result_3 is %q", published["result_3.txt"])
	}
	// One failed run: it is dropped as the worst, with the fastest run.
	sort.Float64s(converged)
	want := (converged[1] + converged[2] + converged[3]) / 3
	if !rep.Score.Valid || math.Abs(rep.Score.Value-want) > 1e-9 {
		t.Errorf("score %+v, want %v", rep.Score, want)
	}
	if len(rep.Reasons) != 0 {
		t.Errorf("reasons %v", rep.Reasons)
	}
}

func TestCheckMLPerfSSD(t *testing.T) {
	dir := filepath.Join(peer, "v4.0-gigacomputing-ssd")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("peer data not available")
	}
	rep, err := CheckMLPerf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Benchmark != "ssd" || rep.Target != 0.34 || len(rep.Runs) != 3 {
		t.Fatalf("report %+v", rep)
	}
	for _, r := range rep.Runs {
		if !r.Converged || len(r.Problems) > 0 || r.EpochsToTarget != 4 {
			t.Errorf("%s: %+v", r.File, r)
		}
	}
	// Three of five published runs: the run count is reported.
	if len(rep.Reasons) != 1 || rep.Reasons[0].Code != CodeRunCount {
		t.Errorf("reasons %v", rep.Reasons)
	}
}

func TestCheckMLPerfProblems(t *testing.T) {
	line := func(ms int64, key, value, meta string) string {
		return `:::MLLOG {"namespace": "", "time_ms": ` + strconv.FormatInt(ms, 10) + `, "event_type": "POINT_IN_TIME", "key": "` + key + `", "value": ` + value + `, "metadata": {` + meta + `}}` + "\n"
	}
	good := func(seed string, acc string) string {
		return line(1, "submission_benchmark", `"resnet"`, "") + line(2, "seed", seed, "") +
			line(10, "run_start", "null", "") + line(20, "eval_accuracy", acc, `"epoch_num": 1`) +
			line(30, "run_stop", "null", `"status": "success"`)
	}
	cases := []struct {
		name string
		logs []string
		want []string // per-file problem codes, "" for none
		fail string   // report-level reason
	}{
		{"all good", []string{good("1", "0.76"), good("2", "0.77"), good("3", "0.8")}, []string{"", "", ""}, CodeRunCount},
		{"below target", []string{good("1", "0.75"), good("2", "0.77"), good("3", "0.8")}, []string{"target_not_reached", "", ""}, CodeRunCount},
		{"no seed", []string{strings.Replace(good("1", "0.76"), `"seed"`, `"sead"`, 1), good("2", "0.77"), good("3", "0.8")}, []string{CodeMissingSeed, "", ""}, CodeRunCount},
		{"two run_stop", []string{good("1", "0.76") + line(40, "run_stop", "null", `"status": "success"`), good("2", "0.77"), good("3", "0.8")}, []string{"duplicate_run_stop", "", ""}, CodeRunCount},
		{"same seed", []string{good("1", "0.76"), good("1", "0.77"), good("3", "0.8")}, []string{"", "", ""}, CodeDuplicateSeed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, l := range c.logs {
				if err := os.WriteFile(filepath.Join(dir, "result_"+strconv.Itoa(i)+".txt"), []byte(l), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := CheckMLPerf(dir)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rep.Runs {
				var codes []string
				for _, p := range r.Problems {
					codes = append(codes, p.Code)
					if p.File == "" || p.Line <= 0 {
						t.Errorf("%s: problem without file and line: %+v", r.File, p)
					}
				}
				if strings.Join(codes, ",") != c.want[i] {
					t.Errorf("%s: problems %v, want %q", r.File, codes, c.want[i])
				}
			}
			found := false
			for _, r := range rep.Reasons {
				found = found || r.Code == c.fail
			}
			if !found {
				t.Errorf("reasons %v lack %s", rep.Reasons, c.fail)
			}
		})
	}
	if _, err := CheckMLPerf(t.TempDir()); d5list.ErrorCode(err) != d5list.EINVALID {
		t.Errorf("empty folder: %v", err)
	}
}
