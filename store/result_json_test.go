package store

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/klauspost/compress/zstd"
)

// fiveRunResult is a result as a real entry's: five runs, each with its
// evaluations and the runner's clock, not the short ones other tests use.
func fiveRunResult() *d5list.Result {
	r := &d5list.Result{Score: d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 187.25, Valid: true,
		Dropped: []int{0, 4}, Min: 181.4, Max: 201.6}, Runner: map[string]string{"cpu_model": "AMD EPYC 7B13"}}
	for i := range 5 {
		run := d5list.RunMetrics{Index: i, File: "result_" + string(rune('0'+i)) + ".txt", Seed: int64(9000 + i),
			Status: "success", Converged: true, TimeToTrain: 180.123456789 + float64(i)*3.3, TTA: 165.97630204059774,
			EpochsToTarget: 3, FinalAccuracy: 0.975, BestAccuracy: 0.98, Throughput: 5422.4608509464215,
			Clock:     &d5list.RunClock{WallS: 190.5 + float64(i), CPUS: 370.25, WaitS: 0.01},
			LogSHA256: strings.Repeat("ab", 32), Fresh: i >= 3, Extra: map[string]float64{"loss": 0.0123}}
		for e := 1; e <= 3; e++ {
			run.Evals = append(run.Evals, d5list.EvalPoint{Epoch: float64(e), Seconds: 61.47 * float64(e) * (1 + float64(i)/100),
				Accuracy: 0.8 + 0.06*float64(e)})
		}
		r.Runs = append(r.Runs, run)
	}
	return r
}

func TestStoredResultsAreCompressedAndReadBack(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	s := testSubmission("l2-digits", 1)
	s.Claimed = fiveRunResult()
	s.Claimed.Score.Value, s.Claimed.Score.Max = math.Inf(1), math.Inf(-1) // not finite: stored as strings
	mustCreate(t, db, s)

	var stored []byte
	if err := db.write.QueryRow(`SELECT claimed FROM submissions WHERE id = ?`, s.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	text, err := json.Marshal(s.Claimed.Runs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(stored, zstdMagic) {
		t.Fatalf("the claimed result is stored as %.40q, want a Zstandard frame", stored)
	}
	// The runs alone take more than 3.5 kB as JSON.
	if len(stored)*3 > len(text) {
		t.Errorf("the stored result takes %d bytes, its runs alone %d as JSON: want a third or less", len(stored), len(text))
	}

	got, err := db.Submission(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(got.Claimed.Score.Value, 1) || !math.IsInf(got.Claimed.Score.Max, -1) {
		t.Fatalf("score read back as %+v", got.Claimed.Score)
	}
	got.Claimed.Score.Value, got.Claimed.Score.Max = s.Claimed.Score.Value, s.Claimed.Score.Max
	if !reflect.DeepEqual(got.Claimed, s.Claimed) {
		t.Fatalf("the claimed result read back differs:\n got %+v\nwant %+v", got.Claimed, s.Claimed)
	}
}

// Rows written before results were deflated hold JSON text; they read as
// they always did, and the next write of the column deflates it.
func TestResultsStoredAsJSONTextStillRead(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	s := mustCreate(t, db, testSubmission("l2-digits", 1, 2))
	want := fiveRunResult()
	text, err := json.Marshal(storedResult{Result: *want, Score: storedScore{Metric: want.Score.Metric,
		Value: jsonFloat(want.Score.Value), Valid: true, Dropped: want.Score.Dropped,
		Min: jsonFloat(want.Score.Min), Max: jsonFloat(want.Score.Max)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.Exec(`UPDATE submissions SET claimed = ?, measured = ? WHERE id = ?`,
		string(text), string(text), s.ID); err != nil {
		t.Fatal(err)
	}
	got, err := db.Submission(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Claimed, want) || !reflect.DeepEqual(got.Measured, want) {
		t.Fatalf("results stored as JSON text read back as\n%+v\n%+v\nwant %+v", got.Claimed, got.Measured, want)
	}
}

func TestACorruptStoredResultNamesItsSubmissionAndColumn(t *testing.T) {
	ctx := context.Background()
	db, _ := newTestDB(t)
	for _, tc := range []struct {
		name   string
		stored []byte
	}{
		{"frame cut short", func() []byte {
			b := compressResult([]byte(`{"runs":[],"score":{"metric":"","value":0,"valid":false,"min":0,"max":0}}`))
			return b[:len(b)/2]
		}()},
		{"frame of an unknown dictionary", func() []byte {
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderDictRaw(7, []byte(`{"runs":[{"index":0,"file":"","seed":1,`)))
			if err != nil {
				t.Fatal(err)
			}
			return enc.EncodeAll([]byte(`{"runs":[]}`), nil)
		}()},
		{"frame of garbage", append(bytes.Clone(zstdMagic), 0xff, 0xff, 0xff, 0x00)},
		{"neither form", []byte("runs")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCreate(t, db, testSubmission("l2-digits", 1))
			if _, err := db.write.Exec(`UPDATE submissions SET measured = ? WHERE id = ?`, tc.stored, s.ID); err != nil {
				t.Fatal(err)
			}
			_, err := db.Submission(ctx, s.ID)
			if want := "decoding measured"; err == nil || !strings.Contains(err.Error(), want) ||
				!strings.Contains(err.Error(), "submission "+strconv.FormatInt(s.ID, 10)) {
				t.Fatalf("reading a corrupt measured result: %v; want an error naming submission %d and %q", err, s.ID, want)
			}
		})
	}
}

func BenchmarkStoredResult(b *testing.B) {
	r := fiveRunResult()
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeResult(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	enc, err := encodeResult(r)
	if err != nil {
		b.Fatal(err)
	}
	stored := string(enc.([]byte))
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeResult(stored); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A copy of the kept decoded result, as reads of it after the first
	// are given.
	b.Run("kept", func(b *testing.B) {
		var kept decodedResults
		for b.Loop() {
			if _, err := kept.decode(stored); err != nil {
				b.Fatal(err)
			}
		}
	})
}
