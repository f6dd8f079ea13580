package mllog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

func TestParseLines(t *testing.T) {
	in := strings.Join([]string{
		`some launcher noise`,
		`[rank 0] :::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "POINT_IN_TIME", "key": "seed", "value": 9007199254740993, "metadata": {"lineno": 3}}`,
		``,
		`:::MLLOG {"time_ms": 1500.4, "event_type": "POINT_IN_TIME", "key": "eval_accuracy", "value": 0.5, "metadata": {"epoch_num": 2}}`,
		":::MLLOG {\"time_ms\": 2000, \"key\": \"run_stop\", \"value\": null, \"metadata\": {\"status\": \"success\"}}\r",
	}, "\n")
	evs, err := Parse(strings.NewReader(in), "r.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("got %d events, want 3", len(evs))
	}
	wantLines := []int{2, 4, 5}
	for i, e := range evs {
		if e.Line != wantLines[i] {
			t.Errorf("event %d (%s) on line %d, want %d", i, e.Key, e.Line, wantLines[i])
		}
	}
	// 2^53+1 is not representable as float64: the seed must stay exact.
	if s, ok := evs[0].Value.(int64); !ok || s != 9007199254740993 {
		t.Errorf("seed = %#v, want int64 9007199254740993", evs[0].Value)
	}
	if evs[1].TimeMS != 1500 {
		t.Errorf("fractional time_ms = %d, want 1500", evs[1].TimeMS)
	}
	if e, ok := evs[1].Meta("epoch_num").(int64); !ok || e != 2 {
		t.Errorf("epoch_num = %#v, want int64 2", evs[1].Meta("epoch_num"))
	}
	if evs[2].Meta("status") != "success" {
		t.Errorf("status = %v", evs[2].Meta("status"))
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, in string
		line     int
	}{
		{"bad json", "ok\n:::MLLOG {\"time_ms\": 1, \"key\": \"a\"\n", 2},
		{"empty payload", ":::MLLOG\n", 1},
		{"trailing text", `:::MLLOG {"time_ms": 1, "key": "a"} extra` + "\n", 1},
		{"no key", `:::MLLOG {"time_ms": 1, "value": 3}`, 1},
		{"no time", "\n\n" + `:::MLLOG {"key": "run_start"}`, 3},
		{"bad time", `:::MLLOG {"key": "run_start", "time_ms": "soon"}`, 1},
		{"not an object", `:::MLLOG [1, 2]`, 1},
		{"too long", ":::MLLOG {\"time_ms\": 1, \"key\": \"a\"}\n" + ":::MLLOG " + strings.Repeat("x", MaxLineBytes+10) + "\n", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.in), "results/result_0.txt")
			var de *d5list.Error
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *d5list.Error", err)
			}
			if de.Code != d5list.EINVALID || len(de.Reasons) == 0 {
				t.Fatalf("code %q, %d reasons", de.Code, len(de.Reasons))
			}
			r := de.Reasons[0]
			if r.Code != CodeSyntax || r.File != "results/result_0.txt" || r.Line != c.line || r.Message == "" {
				t.Errorf("reason = %+v, want %s at line %d", r, CodeSyntax, c.line)
			}
			if !strings.Contains(de.Message, "result_0.txt") {
				t.Errorf("message %q does not name the file", de.Message)
			}
		})
	}
}

// rawRun is what the tests read from a log with plain string matching,
// independently of Parse and Derive.
type rawRun struct {
	file            string
	start, stop     int64
	status          string
	lastAcc         float64
	lastEpoch       float64
	firstReachEpoch float64
}

var (
	reTime   = regexp.MustCompile(`"time_ms": (\d+)`)
	reStatus = regexp.MustCompile(`"status": "(\w+)"`)
	reValue  = regexp.MustCompile(`"value": ([0-9.]+)`)
	reEpoch  = regexp.MustCompile(`"epoch_num": ([0-9.]+)`)
)

func readRaw(t *testing.T, path string, target float64) rawRun {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("peer data not available: %v", err)
	}
	r := rawRun{file: filepath.Base(path), firstReachEpoch: -1}
	for _, l := range strings.Split(string(data), "\n") {
		num := func(re *regexp.Regexp) float64 {
			m := re.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%s: no %v in %q", path, re, l)
			}
			f, _ := strconv.ParseFloat(m[1], 64)
			return f
		}
		switch {
		case strings.Contains(l, `"key": "run_start"`):
			r.start = int64(num(reTime))
		case strings.Contains(l, `"key": "run_stop"`):
			r.stop = int64(num(reTime))
			r.status = reStatus.FindStringSubmatch(l)[1]
		case strings.Contains(l, `"key": "eval_accuracy"`) && r.stop == 0:
			r.lastAcc, r.lastEpoch = num(reValue), num(reEpoch)
			if r.firstReachEpoch < 0 && r.lastAcc >= target {
				r.firstReachEpoch = r.lastEpoch
			}
		}
	}
	return r
}

func deriveFile(t *testing.T, path string, q d5list.QualityTarget, index int) d5list.RunMetrics {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("peer data not available: %v", err)
	}
	defer f.Close()
	evs, err := Parse(f, filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	m, reasons := Derive(evs, q, filepath.Base(path), index)
	if len(reasons) > 0 {
		t.Errorf("%s: unexpected reasons %+v", path, reasons)
	}
	return m
}

var resnetTarget = d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.759, Mode: "first", Direction: d5list.HigherIsBetter}

func TestASUSTeKResNet(t *testing.T) {
	dir := filepath.Join(peer, "v4.0-asustek-resnet")
	var runs []d5list.RunMetrics
	var convergedTimes []float64
	for i := 1; i <= 5; i++ {
		path := filepath.Join(dir, "result_"+strconv.Itoa(i)+".txt")
		raw := readRaw(t, path, 0.759)
		m := deriveFile(t, path, resnetTarget, i)
		runs = append(runs, m)
		want := float64(raw.stop-raw.start) / 1000
		if m.TimeToTrain != want || m.StartMS != raw.start || m.StopMS != raw.stop {
			t.Errorf("%s: time %v (%d..%d), want %v (%d..%d)", raw.file, m.TimeToTrain, m.StartMS, m.StopMS, want, raw.start, raw.stop)
		}
		if m.Status != raw.status || m.FinalAccuracy != raw.lastAcc || m.EpochsToTarget != raw.firstReachEpoch {
			t.Errorf("%s: status %q final %v epochs %v, want %q %v %v", raw.file, m.Status, m.FinalAccuracy, m.EpochsToTarget, raw.status, raw.lastAcc, raw.firstReachEpoch)
		}
		if m.GlobalBatchSize != 3200 || m.Seed == 0 {
			t.Errorf("%s: gbs %d seed %d", raw.file, m.GlobalBatchSize, m.Seed)
		}
		if m.Converged {
			convergedTimes = append(convergedTimes, want)
		}
		// Published facts (SOURCES.md, compliance_result.out).
		if i == 3 {
			if m.Status != StatusAborted || m.Converged || m.FinalAccuracy != 0.75838 || m.EpochsToTarget != -1 {
				t.Errorf("result_3: %+v, want aborted at 0.75838", m)
			}
		} else if m.Status != StatusSuccess || !m.Converged || m.TTA <= 0 || m.TTA > m.TimeToTrain {
			t.Errorf("%s: status %q converged %v tta %v", raw.file, m.Status, m.Converged, m.TTA)
		}
		if m.Throughput < 30000 || m.Throughput > 40000 {
			t.Errorf("%s: throughput %v, want the logged ~36k samples/s", raw.file, m.Throughput)
		}
	}
	if len(convergedTimes) != 4 {
		t.Fatalf("%d converged runs, want 4", len(convergedTimes))
	}
	// MLPerf: the aborted run is the worst and is dropped with the fastest;
	// the score is the mean of the three slower converged runs.
	sort.Float64s(convergedTimes)
	want := (convergedTimes[1] + convergedTimes[2] + convergedTimes[3]) / 3
	s := d5list.OlympicScore(runs, d5list.MetricTimeToTrain, d5list.LowerIsBetter)
	if !s.Valid || math.Abs(s.Value-want) > 1e-9 {
		t.Errorf("score %+v, want %v", s, want)
	}
	if len(s.Dropped) != 2 || !(s.Dropped[0] == 3 || s.Dropped[1] == 3) {
		t.Errorf("dropped %v, want run 3 among them", s.Dropped)
	}
}

func TestGigaComputingSSD(t *testing.T) {
	q := d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.34, Mode: "first", Direction: d5list.HigherIsBetter}
	for i := 0; i < 3; i++ {
		path := filepath.Join(peer, "v4.0-gigacomputing-ssd", "result_"+strconv.Itoa(i)+".txt")
		raw := readRaw(t, path, 0.34)
		m := deriveFile(t, path, q, i)
		if m.TimeToTrain != float64(raw.stop-raw.start)/1000 || !m.Converged || m.GlobalBatchSize != 256 {
			t.Errorf("%s: %+v", raw.file, m)
		}
		if m.EpochsToTarget != raw.firstReachEpoch || m.FinalAccuracy != raw.lastAcc {
			t.Errorf("%s: epochs %v final %v, want %v %v", raw.file, m.EpochsToTarget, m.FinalAccuracy, raw.firstReachEpoch, raw.lastAcc)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "seed", "value": 7, "metadata": {}}`))
	f.Add([]byte("x :::MLLOG {\"time_ms\": 1.5e3, \"key\": \"run_stop\", \"metadata\": {\"status\": \"aborted\"}}\n:::MLLOG {"))
	f.Add([]byte(":::MLLOG\n:::MLLOG null\n:::MLLOG {\"key\": 3}"))
	if data, err := os.ReadFile(filepath.Join(peer, "v4.0-gigacomputing-ssd", "result_0.txt")); err == nil {
		f.Add(data[:4096])
	}
	q := resnetTarget
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := Parse(bytes.NewReader(data), "f.txt")
		if err != nil {
			var de *d5list.Error
			if !errors.As(err, &de) || len(de.Reasons) == 0 || de.Reasons[0].Line < 1 {
				t.Fatalf("error without a located reason: %v", err)
			}
			return
		}
		for i := 1; i < len(evs); i++ {
			if evs[i].Line <= evs[i-1].Line {
				t.Fatalf("lines not increasing: %d then %d", evs[i-1].Line, evs[i].Line)
			}
		}
		m, _ := Derive(evs, q, "f.txt", 0)
		if m.Converged && (m.Status != StatusSuccess || m.EpochsToTarget < 0 && q.Mode == "first") {
			t.Fatalf("converged without success and target: %+v", m)
		}
	})
}

// Python's json module writes a float that is not finite as a bare NaN,
// Infinity or -Infinity, and MLPerf's logger uses it: the line is read,
// the value is that float, and Float refuses it as a measurement.
func TestParsePythonConstants(t *testing.T) {
	in := strings.Join([]string{
		`:::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "POINT_IN_TIME", "key": "train_loss", "value": NaN, "metadata": {"epoch_num": 1, "lr": Infinity, "min": -Infinity}}`,
		`:::MLLOG {"namespace": "", "time_ms": 1001, "event_type": "POINT_IN_TIME", "key": "note", "value": "NaN Infinity stays text", "metadata": {"NaN": [NaN, 1]}}`,
	}, "\n")
	evs, err := Parse(strings.NewReader(in), "r.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
	if v, ok := evs[0].Value.(float64); !ok || !math.IsNaN(v) {
		t.Errorf("value %#v, want NaN", evs[0].Value)
	}
	if v := evs[0].Meta("lr"); v != math.Inf(1) {
		t.Errorf("lr %#v, want +Inf", v)
	}
	if v := evs[0].Meta("min"); v != math.Inf(-1) {
		t.Errorf("min %#v, want -Inf", v)
	}
	if _, ok := Float(evs[0].Value); ok {
		t.Error("Float accepted NaN as a number")
	}
	if evs[1].Value != "NaN Infinity stays text" {
		t.Errorf("string value %#v", evs[1].Value)
	}
	if list, ok := evs[1].Meta("NaN").([]any); !ok || len(list) != 2 || !math.IsNaN(list[0].(float64)) || list[1] != int64(1) {
		t.Errorf("metadata key NaN: %#v", evs[1].Meta("NaN"))
	}
}

// One bad line is a reason naming it; the good lines of the file are still
// returned beside the error.
func TestParseKeepsTheGoodLines(t *testing.T) {
	in := strings.Join([]string{
		`:::MLLOG {"time_ms": 1000, "key": "run_start", "value": null}`,
		`:::MLLOG {"time_ms": 1500, "key": "eval_accuracy", "value": 0.5, `,
		`:::MLLOG {"time_ms": 2000, "key": "run_stop", "value": null, "metadata": {"status": "success"}}`,
	}, "\n")
	evs, err := Parse(strings.NewReader(in), "r.txt")
	rs := d5list.ErrorReasons(err)
	if len(rs) != 1 || rs[0].Line != 2 || rs[0].File != "r.txt" || rs[0].Code != CodeSyntax {
		t.Fatalf("reasons %+v, want one naming r.txt line 2", rs)
	}
	if len(evs) != 2 || evs[0].Key != "run_start" || evs[1].Key != "run_stop" || evs[1].Line != 3 {
		t.Fatalf("events %+v, want run_start and run_stop", evs)
	}
}

// What a parsed event costs must stay near what its line cost: a long
// array is kept as a note of its size, long metadata is dropped, and a
// file stops being read after MaxEvents events, with a reason.
func TestParseBoundsWhatItKeeps(t *testing.T) {
	long := "[" + strings.Repeat("0.123456,", 1000) + "1]"
	in := strings.Join([]string{
		`:::MLLOG {"time_ms": 1, "key": "train_loss", "value": ` + long + `, "metadata": {"epoch_num": 1}}`,
		`:::MLLOG {"time_ms": 2, "key": "tracked_stats", "value": {"throughput": 10.5}, "metadata": {"note": "` + strings.Repeat("x", 5000) + `"}}`,
		`:::MLLOG {"time_ms": 3, "key": "eval_accuracy", "value": [0.5, 0.6], "metadata": {"epoch_num": 2}}`,
	}, "\n")
	evs, err := Parse(strings.NewReader(in), "r.txt")
	if err != nil || len(evs) != 3 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	if note, ok := evs[0].Value.(string); !ok || !strings.Contains(note, fmt.Sprintf("%d bytes, not read", len(long))) {
		t.Errorf("long array kept as %T %.80v, want a note of its size", evs[0].Value, evs[0].Value)
	}
	if evs[0].Metadata["epoch_num"] != int64(1) {
		t.Errorf("metadata of the long-array event lost: %v", evs[0].Metadata)
	}
	if m, ok := evs[1].Value.(map[string]any); !ok || len(m) != 1 || evs[1].Metadata != nil {
		t.Errorf("small object %v kept, long metadata %v dropped: want both", evs[1].Value, evs[1].Metadata)
	}
	if a, ok := evs[2].Value.([]any); !ok || len(a) != 2 {
		t.Errorf("short array read as %v", evs[2].Value)
	}

	var b strings.Builder
	for i := range MaxEvents + 50 {
		fmt.Fprintf(&b, ":::MLLOG {\"time_ms\": %d, \"key\": \"eval_accuracy\", \"value\": 0.5}\n", i)
	}
	evs, err = Parse(strings.NewReader(b.String()), "many.txt")
	rs := d5list.ErrorReasons(err)
	if len(evs) != MaxEvents || len(rs) != 1 || rs[0].Line != MaxEvents+1 || !strings.Contains(rs[0].Message, "the rest is not read") {
		t.Fatalf("%d events, reasons %+v; want %d and one reason at line %d", len(evs), rs, MaxEvents, MaxEvents+1)
	}

	// Metadata of 3 kB a line: past MaxDecodedBytes of values and
	// metadata, well before MaxEvents, the rest is not read.
	b.Reset()
	meta := `{"epoch_num": 1, "note": "` + strings.Repeat("x", 3000) + `"}`
	line := func(i int) string {
		return fmt.Sprintf(":::MLLOG {\"time_ms\": %d, \"key\": \"eval_accuracy\", \"value\": 0.5, \"metadata\": %s}\n", i, meta)
	}
	for i := range 2 * MaxDecodedBytes / len(meta) {
		b.WriteString(line(i))
	}
	evs, err = Parse(strings.NewReader(b.String()), "meta.txt")
	rs = d5list.ErrorReasons(err)
	perEvent := len(meta) + len("0.5")
	if want := MaxDecodedBytes / perEvent; len(evs) != want || DecodedBytes(evs) != want*perEvent || len(rs) != 1 ||
		rs[0].Line != want+1 || !strings.Contains(rs[0].Message, "the rest is not read") {
		t.Fatalf("%d events decoding %d bytes, reasons %+v; want %d events and one reason at line %d", len(evs), DecodedBytes(evs), rs, want, want+1)
	}
	// Within larger limits the same files are read whole.
	lim := Limits{Events: 2 * MaxEvents, DecodedBytes: 4 * MaxDecodedBytes}
	if evs, err := Within(strings.NewReader(b.String()), "meta.txt", lim); err != nil || len(evs) != 2*MaxDecodedBytes/len(meta) {
		t.Errorf("within %+v: %d events, %v; want all %d", lim, len(evs), err, 2*MaxDecodedBytes/len(meta))
	}
}

// A sum or a mean of huge logged values would overflow to +Inf, which
// neither the store nor JSON can hold: Derive drops it with a reason.
func TestDeriveKeepsEveryNumberFinite(t *testing.T) {
	in := strings.Join([]string{
		`:::MLLOG {"time_ms": 1000, "key": "run_start", "value": null}`,
		`:::MLLOG {"time_ms": 1100, "key": "throughput", "value": 1e308}`,
		`:::MLLOG {"time_ms": 1200, "key": "throughput", "value": 1e308}`,
		`:::MLLOG {"time_ms": 1300, "key": "op_time_ms", "value": 1.5e308, "metadata": {"shape": "64x64"}}`,
		`:::MLLOG {"time_ms": 1400, "key": "op_time_ms", "value": 1.5e308, "metadata": {"shape": "64x64"}}`,
		`:::MLLOG {"time_ms": 2000, "key": "run_stop", "value": null, "metadata": {"status": "success"}}`,
	}, "\n")
	evs, err := Parse(strings.NewReader(in), "r.txt")
	if err != nil {
		t.Fatal(err)
	}
	m, reasons := Derive(evs, d5list.QualityTarget{}, "r.txt", 0)
	if m.Throughput != 0 {
		t.Errorf("throughput %v, want dropped", m.Throughput)
	}
	if v, ok := m.Extra["op_time_ms"]; ok {
		t.Errorf("op_time_ms %v, want dropped", v)
	}
	codes := 0
	for _, r := range reasons {
		if r.Code == CodeNotFinite && r.File == "r.txt" {
			codes++
		}
	}
	if codes < 2 {
		t.Errorf("reasons %+v, want one %s for throughput and one for op_time_ms", reasons, CodeNotFinite)
	}
	if _, err := json.Marshal(m); err != nil {
		t.Errorf("the run does not encode: %v", err)
	}
}
