package verifier

import (
	"encoding/json"
	"testing"

	d5list "github.com/deep500/d5list"
)

func TestEqualValues(t *testing.T) {
	sym := d5list.Symbol{Name: "d5.TestAccuracy", Call: true, Kwargs: map[string]any{"max_acc": true}}
	cases := []struct {
		a, b any
		want bool
	}{
		{90, int64(90), true},
		{int64(9007199254740993), int64(9007199254740992), false},
		{json.Number("9007199254740993"), int64(9007199254740993), true},
		{90, 90.0, true},
		{json.Number("90"), 90.0, true},
		{json.Number("0.1"), 0.1, true},
		{90, 90.5, false},
		{90, "90", false},
		{"mlp", "mlp", true},
		{"mlp", "cnn", false},
		{true, true, true},
		{true, 1, false},
		{nil, nil, true},
		{nil, 0, false},
		{map[string]any{"hidden": 64}, map[string]any{"hidden": int64(64)}, true},
		{map[string]any{"hidden": 64}, map[any]any{"hidden": 64.0}, true},
		{map[string]any{"hidden": 64}, map[string]any{"hidden": 64, "depth": 2}, false},
		{map[string]any{"hidden": 64}, map[string]any{"width": 64}, false},
		{[]any{0.1, 0.9}, []float64{0.1, 0.9}, true},
		{[]any{0.1, 0.9}, []any{0.9, 0.1}, false},
		{[]any{0.1}, []any{0.1, 0.9}, false},
		{[]any{}, map[string]any{}, false},
		{sym, &d5list.Symbol{Name: "d5.TestAccuracy", Call: true, Kwargs: map[string]any{"max_acc": true}}, true},
		{sym, d5list.Symbol{Name: "d5.TestAccuracy", Call: true, Kwargs: map[string]any{"max_acc": false}}, false},
		{d5list.Symbol{Name: "d5.ShuffleSampler"}, d5list.Symbol{Name: "d5.ShuffleSampler", Args: []any{}}, true},
		{d5list.Symbol{Name: "d5.ShuffleSampler"}, d5list.Symbol{Name: "d5.ShuffleSampler", Call: true}, false},
		{d5list.Symbol{Name: "x"}, "x", false},
	}
	for _, c := range cases {
		if got := EqualValues(c.a, c.b); got != c.want {
			t.Errorf("EqualValues(%#v, %#v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := EqualValues(c.b, c.a); got != c.want {
			t.Errorf("EqualValues(%#v, %#v) (swapped) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func TestMetricName(t *testing.T) {
	for in, want := range map[string]string{"TestAccuracy": "test_accuracy", "d5.WallclockTime": "wallclock_time", "l2_error": "l2_error", "L2Error": "l2_error"} {
		if got := metricName(in); got != want {
			t.Errorf("metricName(%q) = %q, want %q", in, got, want)
		}
	}
}
