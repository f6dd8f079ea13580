package store

import (
	"encoding/json"
	"math"
	"strconv"

	d5list "github.com/deep500/d5list"
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
	return string(b), nil
}

func decodeResult(data string) (*d5list.Result, error) {
	var sr storedResult
	if err := json.Unmarshal([]byte(data), &sr); err != nil {
		return nil, err
	}
	r := sr.Result
	sc := sr.Score
	r.Score = d5list.Score{Metric: sc.Metric, Value: float64(sc.Value), Valid: sc.Valid, Dropped: sc.Dropped,
		Min: float64(sc.Min), Max: float64(sc.Max), Note: sc.Note}
	return &r, nil
}
