package harness

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	d5list "github.com/deep500/d5list"
)

// A training run hands the runner its state (weights and momentum) every
// StateEvery steps of each epoch while its window is open, through
// $D5_REVEAL: each state a JSON header line ({"state": i, "size": bytes})
// and its float32 values, i counting from the initial state. The runner
// drew, before the window opened, the stretches of steps it will check,
// and keeps only the states at their ends; a state that reaches it after
// run_stop does not count. So every state must exist, as the work it
// ends, while the runner's clock runs, and a run cannot know which of its
// stretches count: one it skipped or shortened is caught wherever the draw
// falls on it. Nothing is revealed after the window.

// Streamed reports whether the task's runs hand the runner their states as
// they train (StreamChallenge, ReadStream, CheckStream) instead of
// revealing committed outputs after their window.
func (t *Task) Streamed() bool { return t.Kind == KindMLPTraining }

// MaxFullStretches bounds the stretches a full audit of one training run
// recomputes, and so the states the runner keeps of it (two a stretch).
const MaxFullStretches = 64

// StreamChallenge draws, from the operating system's random source, the
// stretches of a training run the runner will recompute (DrawStretches).
// The runner draws it when the window opens and never tells the run.
func (t *Task) StreamChallenge(fresh, full bool) Challenge {
	return Challenge{"training": DrawStretches(t.stretches(), t.freshRuns, fresh, full)}
}

// DrawStretches draws, from the operating system's random source, which of
// a training run's g stretches the runner recomputes, in order: the first
// and the last of every run (where weights from elsewhere would enter),
// and for a fresh seed as many more, distinct, as the coverage needs for
// a job of freshRuns fresh runs, for a full audit MaxFullStretches (every
// one of a shorter run). Stretches count from 1.
func DrawStretches(g, freshRuns int, fresh, full bool) []int {
	picked := map[int]bool{1: true, g: true}
	n := len(picked)
	switch {
	case full:
		n = min(MaxFullStretches, g)
	case fresh:
		n = min(n+auditsPerSection(freshRuns), g)
	}
	for len(picked) < n {
		picked[1+randomInt(g)] = true
	}
	drawn := []int{}
	for i := 1; i <= g; i++ {
		if picked[i] {
			drawn = append(drawn, i)
		}
	}
	return drawn
}

// Keeps is which states the runner keeps of a streamed run audited by c:
// the initial one (remade from the seed), the last (evaluated), and both
// ends of every drawn stretch.
func (t *Task) Keeps(c Challenge) map[int]bool {
	keep := map[int]bool{0: true, t.stretches(): true}
	for _, g := range c["training"] {
		keep[g-1], keep[g] = true, true
	}
	return keep
}

// StreamReadBuffer is the most ReadStream asks of its reader at once: the
// bytes a read under way may hold that the runner has not counted yet.
const StreamReadBuffer = 64 << 10

// chunkedReader reads at most StreamReadBuffer bytes at a time, so that a
// read under way holds no more than that.
type chunkedReader struct{ r io.Reader }

func (c chunkedReader) Read(p []byte) (int, error) {
	return c.r.Read(p[:min(len(p), StreamReadBuffer)])
}

// Touched is n bytes whose pages have been written, so that reading into
// them faults nothing in: a reader of a run's states takes every state
// into such memory, and the run cannot time its writes to learn which
// ones the runner keeps.
func Touched(n int) []byte {
	b := make([]byte, n)
	for j := 0; j < n; j += 4096 {
		b[j] = 0
	}
	return b
}

// Stream is what the runner took of a run's streamed states.
type Stream struct {
	States  map[int][]byte // the kept states, by index
	Arrived int            // the states that arrived whole, in order, before run_stop
	Late    int            // the first state that arrived after run_stop; -1: none
	Err     error          // why the reading stopped before the stream's end
}

// ReadStream reads a run's states from r as they arrive, keeping those
// keep names and discarding the others, until r ends or breaks the
// format (Stream.Err names how). late, where set, reports whether the
// stream's first end bytes had not all been written when the run's
// run_stop arrived.
func (t *Task) ReadStream(r io.Reader, keep map[int]bool, late func(end int64) bool) *Stream {
	st := &Stream{States: map[int][]byte{}, Late: -1}
	size := stateBytes(t.Layers)
	total := t.stretches() + 1
	// Every state is read the same way, into memory already touched: a
	// kept one into its own buffer, the others into one scratch buffer.
	// Were a kept state slower to take (fresh pages to fault in), the run
	// could time its writes and learn which stretches are drawn.
	buffers := map[int][]byte{}
	for i := range keep {
		if i >= 0 && i < total {
			buffers[i] = Touched(size)
		}
	}
	scratch := Touched(size)
	br := bufio.NewReaderSize(chunkedReader{r}, StreamReadBuffer)
	var pos int64 // bytes of the stream read through br
	for next := 0; ; next++ {
		line, err := readHeader(br)
		if errors.Is(err, io.EOF) {
			return st
		}
		if err != nil {
			st.Err = err
			return st
		}
		pos += int64(len(line)) + 1
		var h struct {
			State *int `json:"state"`
			Size  int  `json:"size"`
		}
		if err := json.Unmarshal(line, &h); err != nil || h.State == nil {
			st.Err = fmt.Errorf("a state's header is not the harness's: %.60q", line)
			return st
		}
		i := *h.State
		switch {
		case i != next || i >= total:
			st.Err = fmt.Errorf("state %d arrived after %d states; a run of %d stretches hands over states 0 to %d, in order", i, next, total-1, total-1)
			return st
		case h.Size != size:
			st.Err = fmt.Errorf("state %d holds %d bytes; the task's network's state (weights and momentum, float32) is %d", i, h.Size, size)
			return st
		}
		dst, kept := buffers[i]
		if !kept {
			dst = scratch
		}
		if n, err := io.ReadFull(br, dst); err != nil {
			st.Err = fmt.Errorf("state %d ends after %d bytes of %d", i, n, size)
			return st
		}
		if kept {
			st.States[i] = dst
		}
		pos += int64(size)
		switch {
		case st.Late >= 0:
		case late != nil && late(pos):
			st.Late = i
		default:
			st.Arrived++
		}
	}
}

// CheckStream checks what the runner kept of a streamed training run: every
// state arrived before run_stop, none holds a NaN or an infinity, the
// initial state is the seed's, each drawn stretch recomputed from the
// state before it ends where the run's did (within stretchTolerance of its
// step), and the last state's test accuracy. pace is called between its
// steps.
func (t *Task) CheckStream(seed int64, st *Stream, c Challenge, pace func()) *d5list.Audit {
	s := t.sections[0]
	a := &d5list.Audit{Sections: []d5list.AuditSection{}}
	as := d5list.AuditSection{Name: s.name, Calls: s.calls, Checked: []int{}}
	fail := func(code, format string, args ...any) {
		a.Failures = append(a.Failures, d5list.Reason{Code: code, Message: fmt.Sprintf(format, args...)})
	}
	defer func() { a.Sections = append(a.Sections, as) }()
	switch {
	case st == nil:
		fail(d5list.AuditMissing, "training: the runner read none of the run's states")
		return a
	case st.Err != nil:
		fail(d5list.AuditMissing, "training: the run's states broke off after %d of %d: %v", st.Arrived, s.calls, st.Err)
		return a
	case st.Late >= 0:
		fail(d5list.AuditMissing, "training: state %d (%s) reached the runner after run_stop: the work it ends was not done while the runner's clock ran", st.Late, t.describeState(st.Late))
		return a
	case st.Arrived < s.calls:
		fail(d5list.AuditMissing, "training: the run handed over %d of its %d states (the initial one, then one every %d steps of each epoch and at its end) before run_stop", st.Arrived, s.calls, t.StateEvery)
		return a
	}
	// Each kept state parsed once, NaN and infinity found as it is.
	states := map[int]mlpState{}
	for _, i := range slices.Sorted(maps.Keys(st.States)) {
		parsed, j := parseFiniteState(t.Layers, st.States[i])
		if j >= 0 {
			// No recomputation decides against a NaN: honest training
			// never hands one over (a run that diverges fails as not
			// converged, by its accuracy).
			fail(d5list.AuditNonFinite, "training, state %d (%s): value %d is %s", i, t.describeState(i), j, describe(st.States[i], s.elem, j))
			return a
		}
		states[i] = parsed
	}
	check := func(i int, rel, abs float64) {
		as.Checked = append(as.Checked, i)
		as.MaxRelError, as.MaxAbsError = finiteMax(as.MaxRelError, rel), finiteMax(as.MaxAbsError, abs)
		switch {
		case math.IsNaN(rel):
			fail(d5list.AuditNonFinite, "training, state %d (%s): the runner's own computation from the state before it is not finite", i, t.describeState(i))
		case !(rel <= stretchTolerance):
			fail(d5list.AuditMismatch, "training, state %d (%s): %.3g of its step (relative) from the runner's own computation from the state before it, over the tolerance of %.3g", i, t.describeState(i), rel, stretchTolerance)
		}
	}
	want := initialState(t.Layers, seed)
	rel, abs := stateDistance(states[0], want, want)
	check(0, rel, abs)
	drawn := c["training"]
	if len(drawn) > 0 {
		data, err := digitsSplit(testShare)
		if err != nil {
			fail(d5list.AuditMissing, "training: the runner cannot recompute the run's steps: %v", err)
			return a
		}
		edgesFailed := false
		for _, g := range drawn {
			start, ok1 := states[g-1]
			got, ok2 := states[g]
			if !ok1 || !ok2 {
				// Keeps kept both ends of every drawn stretch and every
				// state arrived: a stretch that cannot be checked fails.
				fail(d5list.AuditMissing, "training, state %d: the runner holds no state at both ends of this drawn stretch", g)
				continue
			}
			epoch, from, to := t.stretch(g)
			want := trainSteps(t, data, start, seed, epoch, from, to, pace)
			rel, abs := stateDistance(got, want, start)
			if rel > stretchTolerance && !math.IsInf(rel, 1) && !edgesFailed {
				// Once a stretch fails with its edges turned the run is
				// a discrepancy; later ones are not searched, so a run
				// that skips its work costs the runner one search.
				rel, abs = recomputeOnEdges(t, data, start, got, seed, epoch, from, to, pace, rel, abs)
				edgesFailed = rel > stretchTolerance
			}
			check(g, rel, abs)
		}
	}
	slices.Sort(as.Checked)
	if last := st.States[s.calls-1]; last != nil && s.final != nil {
		pace()
		if acc, ok := s.final(last); ok {
			as.Accuracy = &acc
		}
	}
	return a
}

// describeState says where state i of a training run lies.
func (t *Task) describeState(i int) string {
	if i == 0 {
		return "the initial weights"
	}
	epoch, _, to := t.stretch(i)
	return fmt.Sprintf("epoch %d after step %d of %d", epoch, to, t.stepsPerEpoch())
}
