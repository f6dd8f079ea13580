// Package mllog reads and writes MLPerf MLLOG lines:
//
//	:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "seed", "value": 7, "metadata": {...}}
//
// Anything before ":::MLLOG" on a line is ignored, as MLPerf's own
// compliance checker does.
package mllog

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Prefix marks an MLLOG line.
const Prefix = ":::MLLOG "

// Event types.
const (
	PointInTime   = "POINT_IN_TIME"
	IntervalStart = "INTERVAL_START"
	IntervalEnd   = "INTERVAL_END"
)

// Keys the portal reads or writes.
const (
	KeySubmissionBenchmark = "submission_benchmark"
	KeySubmissionOrg       = "submission_org"
	KeySubmissionDivision  = "submission_division"
	KeySeed                = "seed"
	KeyGlobalBatchSize     = "global_batch_size"
	KeyInitStart           = "init_start"
	KeyInitStop            = "init_stop"
	KeyRunStart            = "run_start"
	KeyRunStop             = "run_stop"
	KeyEpochStart          = "epoch_start"
	KeyEpochStop           = "epoch_stop"
	KeyEvalStart           = "eval_start"
	KeyEvalStop            = "eval_stop"
	KeyEvalAccuracy        = "eval_accuracy"
	KeyTrainSamples        = "train_samples"
	KeyEvalSamples         = "eval_samples"
	KeyThroughput          = "throughput"
)

// Event is one MLLOG record. Value is whatever JSON the line held.
type Event struct {
	Namespace string         `json:"namespace"`
	TimeMS    int64          `json:"time_ms"`
	EventType string         `json:"event_type"`
	Key       string         `json:"key"`
	Value     any            `json:"value"`
	Metadata  map[string]any `json:"metadata"`
	// Line is the 1-based line of the event in its file (not serialised).
	Line int `json:"-"`
	// Decoded is the bytes of JSON text Parse decoded into Value and
	// Metadata (not serialised): what the event holds beyond its fixed
	// fields is some ten times this for an object of short keys.
	Decoded int `json:"-"`
}

// Writer emits MLLOG lines. It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	err error
}

// NewWriter writes events to w, stamping them with now (time.Now if nil).
func NewWriter(w io.Writer, now func() time.Time) *Writer {
	if now == nil {
		now = time.Now
	}
	return &Writer{w: w, now: now}
}

// Event writes one record and returns the time it was stamped with.
func (lw *Writer) Event(eventType, key string, value any, metadata map[string]any) time.Time {
	t := lw.now()
	if metadata == nil {
		metadata = map[string]any{}
	}
	b, err := json.Marshal(Event{TimeMS: t.UnixMilli(), EventType: eventType, Key: key, Value: value, Metadata: metadata})
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.err != nil {
		return t
	}
	if err == nil {
		_, err = fmt.Fprintf(lw.w, "%s%s\n", Prefix, b)
	}
	lw.err = err
	return t
}

// Point writes a POINT_IN_TIME event.
func (lw *Writer) Point(key string, value any, metadata map[string]any) time.Time {
	return lw.Event(PointInTime, key, value, metadata)
}

// Start writes an INTERVAL_START event.
func (lw *Writer) Start(key string, value any, metadata map[string]any) time.Time {
	return lw.Event(IntervalStart, key, value, metadata)
}

// End writes an INTERVAL_END event.
func (lw *Writer) End(key string, value any, metadata map[string]any) time.Time {
	return lw.Event(IntervalEnd, key, value, metadata)
}

// Err returns the first write error, if any.
func (lw *Writer) Err() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.err
}
