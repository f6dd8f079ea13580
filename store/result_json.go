package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"

	d5list "github.com/deep500/d5list"
	"github.com/klauspost/compress/zstd"
)

// A Score of runs that did not converge is +Inf (or -Inf), which JSON
// cannot hold; storedResult writes the score's numbers as strings where
// they are not finite, so that the value reads back as it was.
type storedResult struct {
	d5list.Result
	Score storedScore `json:"score"` // shadows Result.Score
}

type storedScore struct {
	Metric  string    `json:"metric"`
	Value   jsonFloat `json:"value"`
	Valid   bool      `json:"valid"`
	Dropped []int     `json:"dropped,omitempty"`
	Min     jsonFloat `json:"min"`
	Max     jsonFloat `json:"max"`
	Note    string    `json:"note,omitempty"`
}

type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return json.Marshal(strconv.FormatFloat(v, 'g', -1, 64)) // "+Inf", "-Inf", "NaN"
	}
	return json.Marshal(v)
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := strconv.ParseFloat(s, 64)
		*f = jsonFloat(v)
		return err
	}
	var v float64
	err := json.Unmarshal(b, &v)
	*f = jsonFloat(v)
	return err
}

// A result is stored as a Zstandard frame: its JSON repeats the same keys
// for every run and every evaluation, so a synthetic result of five runs
// takes about 610 bytes instead of 2,100, a submission's row fits a page
// without overflow, and a seeded folder takes 3.8 kB a submission instead
// of 6.3 kB (at ten million submissions, 25 GB less). Rows written before
// hold JSON text, which starts with '{', and read as they are. No
// dictionary: against one of the keys a result takes 360 bytes, but each
// compression costs twice as much, its tables copied afresh from the
// dictionary's.

// maxStoredResult bounds what one stored result decompresses to: the
// database is the portal's own, but a corrupt row must not take the
// server's memory with it.
const maxStoredResult = 64 << 20

// zstdMagic starts every Zstandard frame; JSON text cannot start so.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// The fastest level: seeding a million synthetic submissions compresses
// two million results, and the default level takes four times as long
// for 5 % fewer bytes. Both are safe for concurrent use; the encoder keeps
// one state per core.
var (
	resultEncoder = sync.OnceValue(func() *zstd.Encoder {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // only for options out of range
		}
		return enc
	})
	resultDecoder = sync.OnceValue(func() *zstd.Decoder {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxStoredResult))
		if err != nil {
			panic(err)
		}
		return dec
	})
)

func encodeResult(r *d5list.Result) (any, error) {
	if r == nil {
		return nil, nil
	}
	sc := r.Score
	b, err := json.Marshal(storedResult{Result: *r, Score: storedScore{
		Metric: sc.Metric, Value: jsonFloat(sc.Value), Valid: sc.Valid, Dropped: sc.Dropped,
		Min: jsonFloat(sc.Min), Max: jsonFloat(sc.Max), Note: sc.Note,
	}})
	if err != nil {
		return nil, err
	}
	return compressResult(b), nil
}

func compressResult(js []byte) []byte {
	return resultEncoder().EncodeAll(js, make([]byte, 0, len(js)/4+32))
}

// decodeResult reads a stored result: compressed, or JSON text as rows
// written before compression are.
func decodeResult(data string) (*d5list.Result, error) {
	js := []byte(data)
	if bytes.HasPrefix(js, zstdMagic) {
		var err error
		if js, err = resultDecoder().DecodeAll(js, nil); err != nil {
			return nil, fmt.Errorf("decompressing the stored result: %w", err)
		}
	}
	var sr storedResult
	if err := json.Unmarshal(js, &sr); err != nil {
		return nil, err
	}
	r := sr.Result
	sc := sr.Score
	r.Score = d5list.Score{Metric: sc.Metric, Value: float64(sc.Value), Valid: sc.Valid, Dropped: sc.Dropped,
		Min: float64(sc.Min), Max: float64(sc.Max), Note: sc.Note}
	return &r, nil
}
