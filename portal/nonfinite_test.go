package portal

import (
	"fmt"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/verifier"
)

// A NaN or an infinity anywhere in a re-run's log of the competitor's code
// (here a loss and one evaluation, as Python's json module writes them) is
// a discrepancy of its own, naming the line, and not an evaluation left
// out: honest training does not log one, and a diverged run fails anyway.
func TestReRunWithNonFiniteValuesIsADiscrepancy(t *testing.T) {
	bs, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	bench, err := catalog.Lookup(bs, "l2-digits-mlp-torch-cpu")
	if err != nil {
		t.Fatal(err)
	}
	runLog := func(seed int64, bad bool) []byte {
		var b strings.Builder
		line := func(ms int, key, value string, meta string) {
			fmt.Fprintf(&b, ":::MLLOG {\"namespace\": \"\", \"time_ms\": %d, \"event_type\": \"POINT_IN_TIME\", \"key\": %q, \"value\": %s, \"metadata\": {%s}}\n", ms, key, value, meta)
		}
		line(1000, "submission_benchmark", `"l2-digits-mlp-torch-cpu"`, "")
		line(1000, "seed", fmt.Sprint(seed), "")
		line(1001, "run_start", "null", "")
		for epoch := 1; epoch <= 30; epoch++ {
			acc, loss := fmt.Sprint(0.5+float64(epoch)/60), "0.1"
			if bad && epoch == 12 {
				acc, loss = "NaN", "Infinity"
			}
			line(1001+epoch*50, "train_loss", loss, fmt.Sprintf(`"epoch_num": %d`, epoch))
			line(1001+epoch*50, "eval_accuracy", acc, fmt.Sprintf(`"epoch_num": %d`, epoch))
		}
		line(2600, "run_stop", "null", `"status": "success"`)
		return []byte(b.String())
	}
	logs := func(bad bool) []d5list.RunLog {
		var l []d5list.RunLog
		for i := range bench.Runs {
			l = append(l, d5list.RunLog{Index: i, Seed: int64(100 + i), Log: runLog(int64(100+i), bad && i == 2)})
		}
		return l
	}
	claimed, err := Measure(bench, logs(false))
	if err != nil {
		t.Fatal(err)
	}
	measured, err := Measure(bench, logs(true))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(measured.Runs[2].NonFinite); n != 2 {
		t.Fatalf("run 2 holds a NaN and an infinity; Measure found %d: %+v", n, measured.Runs[2].NonFinite)
	}
	st, reasons := verifier.Compare(bench, claimed, measured, true)
	found := 0
	for _, r := range reasons {
		if r.Code == d5list.AuditNonFinite {
			found++
			if r.Run == nil || *r.Run != 2 || r.Line == 0 {
				t.Fatalf("reason %+v: want run 2 and the line", r)
			}
		}
	}
	if st != d5list.StatusDiscrepancy || found != 2 {
		t.Fatalf("%s %+v, want a discrepancy with two %s reasons", st, reasons, d5list.AuditNonFinite)
	}
	if st, _ := verifier.Compare(bench, claimed, claimed, true); st == d5list.StatusDiscrepancy {
		t.Fatalf("the same logs without the NaN: %s", st)
	}
}
