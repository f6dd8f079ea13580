package mllog

import (
	"reflect"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// TestDeriveOperatorRun folds an operator run's per-shape results into one
// value each (time summed, errors the worst shape's), ignores values logged
// outside the run, and judges convergence on the folded error without an
// evaluation curve.
func TestDeriveOperatorRun(t *testing.T) {
	log := strings.Join([]string{
		`:::MLLOG {"time_ms":1000,"event_type":"POINT_IN_TIME","key":"seed","value":7,"metadata":{}}`,
		`:::MLLOG {"time_ms":1000,"event_type":"POINT_IN_TIME","key":"op_time_ms","value":100,"metadata":{"shape":"early"}}`,
		`:::MLLOG {"time_ms":1010,"event_type":"INTERVAL_START","key":"run_start","value":null,"metadata":{}}`,
		`:::MLLOG {"time_ms":1100,"event_type":"POINT_IN_TIME","key":"op_time_ms","value":14.5,"metadata":{"shape":"a"}}`,
		`:::MLLOG {"time_ms":1100,"event_type":"POINT_IN_TIME","key":"op_rel_l2_error","value":1.5e-15,"metadata":{"shape":"a"}}`,
		`:::MLLOG {"time_ms":1100,"event_type":"POINT_IN_TIME","key":"op_max_error","value":1e-13,"metadata":{"shape":"a"}}`,
		`:::MLLOG {"time_ms":1200,"event_type":"POINT_IN_TIME","key":"op_time_ms","value":8.25,"metadata":{"shape":"b"}}`,
		`:::MLLOG {"time_ms":1200,"event_type":"POINT_IN_TIME","key":"op_rel_l2_error","value":3e-15,"metadata":{"shape":"b"}}`,
		`:::MLLOG {"time_ms":1200,"event_type":"POINT_IN_TIME","key":"op_max_error","value":2e-14,"metadata":{"shape":"b"}}`,
		`:::MLLOG {"time_ms":1210,"event_type":"INTERVAL_END","key":"run_stop","value":null,"metadata":{"status":"success"}}`,
	}, "\n")
	events, err := Parse(strings.NewReader(log), "r.txt")
	if err != nil {
		t.Fatal(err)
	}
	q := d5list.QualityTarget{Metric: d5list.MetricOpRelL2Error, Target: 1e-12, Mode: "final", Direction: d5list.LowerIsBetter}
	m, reasons := Derive(events, q, "r.txt", 0)
	if len(reasons) != 0 {
		t.Fatalf("reasons %v", reasons)
	}
	want := map[string]float64{d5list.MetricOpTime: 22.75, d5list.MetricOpRelL2Error: 3e-15, d5list.MetricOpMaxError: 1e-13}
	for k, v := range want {
		if m.Extra[k] != v {
			t.Errorf("%s = %v, want %v (extra %v)", k, m.Extra[k], v, m.Extra)
		}
	}
	// Per shape, in log order, without the value logged before run_start.
	wantShapes := []d5list.ShapeMetrics{
		{Shape: "a", Metrics: map[string]float64{d5list.MetricOpTime: 14.5, d5list.MetricOpRelL2Error: 1.5e-15, d5list.MetricOpMaxError: 1e-13}},
		{Shape: "b", Metrics: map[string]float64{d5list.MetricOpTime: 8.25, d5list.MetricOpRelL2Error: 3e-15, d5list.MetricOpMaxError: 2e-14}},
	}
	if !reflect.DeepEqual(m.Shapes, wantShapes) {
		t.Errorf("shapes %+v, want %+v", m.Shapes, wantShapes)
	}
	if !m.Converged || len(m.Evals) != 0 || m.TimeToTrain != 0.2 {
		t.Errorf("converged %v, %d evals, time %v; want converged, no curve, 0.2 s", m.Converged, len(m.Evals), m.TimeToTrain)
	}

	q.Target = 2e-15 // shape b's error is above it
	if m, _ := Derive(events, q, "r.txt", 0); m.Converged {
		t.Error("a run whose worst shape misses the tolerance converged")
	}
}

// An operator's errors may be logged after run_stop (the harness checks
// the last output off the clock); its time may not: an op_time_ms after
// run_stop is not the run's.
func TestDeriveTakesErrorsAfterRunStop(t *testing.T) {
	log := strings.Join([]string{
		`:::MLLOG {"time_ms":1010,"event_type":"INTERVAL_START","key":"run_start","value":null,"metadata":{}}`,
		`:::MLLOG {"time_ms":1100,"event_type":"POINT_IN_TIME","key":"op_time_ms","value":14.5,"metadata":{"shape":"a"}}`,
		`:::MLLOG {"time_ms":1210,"event_type":"INTERVAL_END","key":"run_stop","value":null,"metadata":{"status":"success"}}`,
		`:::MLLOG {"time_ms":1300,"event_type":"POINT_IN_TIME","key":"op_rel_l2_error","value":1.5e-15,"metadata":{"shape":"a"}}`,
		`:::MLLOG {"time_ms":1300,"event_type":"POINT_IN_TIME","key":"op_max_error","value":1e-13,"metadata":{"shape":"a"}}`,
		`:::MLLOG {"time_ms":1300,"event_type":"POINT_IN_TIME","key":"op_time_ms","value":1,"metadata":{"shape":"a"}}`,
	}, "\n")
	events, err := Parse(strings.NewReader(log), "r.txt")
	if err != nil {
		t.Fatal(err)
	}
	q := d5list.QualityTarget{Metric: d5list.MetricOpRelL2Error, Target: 1e-12, Mode: "final", Direction: d5list.LowerIsBetter}
	m, _ := Derive(events, q, "r.txt", 0)
	if m.Extra[d5list.MetricOpRelL2Error] != 1.5e-15 || m.Extra[d5list.MetricOpMaxError] != 1e-13 || m.Extra[d5list.MetricOpTime] != 14.5 || !m.Converged {
		t.Fatalf("extra %v, converged %v: want the errors logged after run_stop and the time logged before it", m.Extra, m.Converged)
	}
}
