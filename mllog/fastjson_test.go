package mllog

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// sameEvent compares events as values, NaN equal to NaN.
func sameEvent(a, b Event) bool {
	return reflect.DeepEqual(nanless(a.Value), nanless(b.Value)) && reflect.DeepEqual(nanless(a.Metadata), nanless(b.Metadata)) &&
		a.Namespace == b.Namespace && a.TimeMS == b.TimeMS && a.EventType == b.EventType && a.Key == b.Key
}

func nanless(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) {
			return "NaN"
		}
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = nanless(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = nanless(e)
		}
		return out
	}
	return v
}

// checkFast asserts that the fast path takes a payload as encoding/json
// does, or leaves it to encoding/json.
func checkFast(t *testing.T, p []byte) {
	t.Helper()
	fast, ok := decodeFast(p)
	slow, err := decodeSlow(p)
	if ok && (err != nil || !sameEvent(fast, slow)) {
		t.Errorf("%q: fast %+v, encoding/json %+v (%v)", p, fast, slow, err)
	}
	// Both count the text they decoded against the upload's budget; the
	// slow path counts a NaN or an infinity as the string it rewrites it
	// to, a few bytes more.
	if ok && err == nil && bytes.Equal(pythonConstants(p), p) && fast.Decoded != slow.Decoded {
		t.Errorf("%q: the fast path decoded %d bytes, encoding/json %d", p, fast.Decoded, slow.Decoded)
	}
}

var fastCases = []string{
	`{"namespace": "", "time_ms": 1727662349033, "event_type": "POINT_IN_TIME", "key": "seed", "value": 3697085557, "metadata": {"file": "/workspace/ssd/train.py", "lineno": 368}}`,
	`{"time_ms": 1.5e3, "key": "eval_accuracy", "value": {"FID": 74.3, "CLIP": 0.18}, "metadata": {"epoch_num": 4.0, "samples_count": 3072000, "metric": "FID"}}`,
	`{"time_ms": 1, "key": "train_loss", "value": NaN, "metadata": {"lr": Infinity, "min": -Infinity}}`,
	`{"time_ms": 1, "key": "x", "value": "caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \n", "metadata": null}`,
	`{"time_ms": 1, "key": "x", "value": [1, -0, 2.5E-3, true, false, null, [], {}], "extra": {"deep": [[["a"]]]}}`,
	`{"time_ms": 1, "KEY": "x", "key": "y"}`,
	`{"time_ms": 1, "key": "x", "value": "\ud83d"}`,
	`{"time_ms": 1, "key": "x", "value": 01}`,
	`{"time_ms": 1, "key": "x", "value": 1.}`,
	`{"time_ms": 1, "key": "x", "value": 1}, `,
	`{"time_ms": "12", "key": "x"}`,
	`{"time_ms": 1, "key": "", "value": 1}`,
	`{"time_ms": 1, "key": "x", "value": 9223372036854775808}`,
	`{"time_ms": 1, "key": "x", "metadata": [1]}`,
	`{"time_ms": 1, "key": "x", "value": "a` + "\t" + `b"}`,
	`{"time_ms": 1, "key": "x", "value": "` + "\xff" + `"}`,
	`{"time_ms": 1e400, "key": "x"}`,
	`{"key": "x", "time_ms": 2, "value": {"a": 1, "a": 2}}`,
	`{"key": "x", "time_ms": 2, "value": [1, 2], "value": 3, "metadata": {"a": 1}, "metadata": null}`,
}

func TestDecodeFastAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range fastCases {
		checkFast(t, []byte(c))
	}
	// Every line of the published MLPerf logs the verifier's tests hold.
	files, _ := filepath.Glob("../verifier/testdata/mlperf/v*/*/results/*/*/result_*.txt")
	taken := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, MaxLineBytes)
		for sc.Scan() {
			if i := bytes.Index(sc.Bytes(), []byte(marker)); i >= 0 {
				p := bytes.TrimSpace(sc.Bytes()[i+len(marker):])
				checkFast(t, p)
				if _, ok := decodeFast(p); ok {
					taken++
				}
			}
		}
	}
	t.Logf("the fast path took %d lines of %d files", taken, len(files))
}

func FuzzDecodeFast(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		checkFast(t, p)
	})
}
