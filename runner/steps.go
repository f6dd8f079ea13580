package runner

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/harness"
)

// A run of a benchmark with a step audit (VerifyPolicy.Steps) hands the
// runner its training state as it trains, through one more FIFO of its
// control folder, $D5_STATES: state 0 before its first step and state i at
// the end of its i-th stretch of steps, in order. When the window opens
// the runner draws the stretches it will recompute (the first, the last
// and, for a fresh seed, enough more for the stated coverage:
// harness.DrawStretches) and never tells the run; it keeps the states at
// both ends of each and reads every other state the same way into memory
// it touched before, so a run timing its writes cannot tell which ones it
// keeps. As for the model, a mark of the runner's own written into the
// FIFO when run_stop arrives ends what counts: a state after it was made
// after the window. Once the job's runs are over, the benchmark's script
// recomputes each drawn stretch from its first state, or from the seed for
// the first stretch, on the runner's /usr.
//
// So every state must exist, as the work it ends, while the runner's clock
// runs, and a run cannot know which of its stretches count: one it skipped
// or cut short fails wherever the draw falls on it.

const (
	windowStatesName = "states"
	stepsScriptName  = "steps.py"
	stepsChecksName  = "steps.json"
	// maxStateHeader bounds a state's header line.
	maxStateHeader = 256
	// stateReadBuffer is the most one read of the states FIFO takes.
	stateReadBuffer = 64 << 10
)

// stateSink is what a window needs to take its run's states.
type stateSink struct {
	audit       *d5list.StepAudit
	freshRuns   int
	fresh, full bool
}

// stateIntake is what a window took of its run's states; guarded by
// window.mu once the reader has started.
type stateIntake struct {
	drawn   []int          // the stretches drawn when the window opened
	kept    map[int][]byte // the kept states' buffers, by index, then their bytes
	mark    []byte         // written into the FIFO when run_stop arrives
	marked  bool           // the mark was written
	arrived int            // the states that arrived whole before the mark
	found   bool           // the reader met the mark
	late    int64          // bytes after the mark
	format  error          // how the stream broke the format
	err     error          // the runner could not mark the end
}

// startStates draws the stretches to check and starts reading the states.
func (w *window) startStates(sink *stateSink) error {
	mark := make([]byte, 32)
	if _, err := rand.Read(mark); err != nil {
		return err
	}
	g, size := sink.audit.Stretches, int(sink.audit.StateBytes())
	drawn := harness.DrawStretches(g, sink.freshRuns, sink.fresh, sink.full)
	kept := map[int][]byte{}
	for _, s := range drawn {
		if s > 1 { // the first stretch starts from the seed's own state
			kept[s-1] = harness.Touched(size)
		}
		kept[s] = harness.Touched(size)
	}
	w.statesIn = stateIntake{drawn: drawn, kept: kept, mark: mark}
	go w.readStates(g, harness.Touched(size))
	return nil
}

// markStatesEnd writes the mark after which no state counts; w.mu is held.
func (w *window) markStatesEnd() {
	if _, err := w.statesW.Write(w.statesIn.mark); err != nil {
		w.statesIn.err = fmt.Errorf("marking the states' end at run_stop: %w", err)
		return
	}
	w.statesIn.marked = true
}

// readStates reads the run's states until the mark, then drains the FIFO,
// counting what follows the mark, so that the run never blocks on it.
func (w *window) readStates(g int, scratch []byte) {
	defer close(w.statesDone)
	w.mu.Lock()
	kept, mark := w.statesIn.kept, w.statesIn.mark
	w.mu.Unlock()
	m := &markedReader{r: w.statesR, mark: mark, chunk: make([]byte, stateReadBuffer)}
	sizes, arrived, format := readStateFrames(bufio.NewReaderSize(m, maxStateHeader), g, kept, scratch)
	_, _ = io.Copy(io.Discard, m)
	m.drain()
	w.mu.Lock()
	defer w.mu.Unlock()
	in := &w.statesIn
	for i, b := range in.kept {
		if n, ok := sizes[i]; ok {
			in.kept[i] = b[:n]
		} else {
			delete(in.kept, i)
		}
	}
	in.arrived, in.format, in.found, in.late = arrived, format, m.found, m.late
}

// readStateFrames reads states 0 to g in order, each a JSON header line
// {"state": i, "size": bytes} and its bytes, into kept[i] where kept has
// it and into scratch otherwise. It returns the kept states' sizes, how
// many states arrived whole, and how the stream broke the format.
func readStateFrames(r *bufio.Reader, g int, kept map[int][]byte, scratch []byte) (map[int]int, int, error) {
	sizes := map[int]int{}
	for i := 0; ; i++ {
		line, err := r.ReadSlice('\n')
		switch {
		case err == io.EOF && len(line) == 0:
			return sizes, i, nil
		case errors.Is(err, bufio.ErrBufferFull):
			return sizes, i, fmt.Errorf("state %d: its header line is longer than %d bytes", i, maxStateHeader)
		case err != nil:
			return sizes, i, fmt.Errorf("state %d: the stream ended in its header line", i)
		}
		var h struct {
			State *int   `json:"state"`
			Size  *int64 `json:"size"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		switch err := dec.Decode(&h); {
		case err != nil || h.State == nil || h.Size == nil:
			return sizes, i, fmt.Errorf(`state %d: its header line is not {"state": i, "size": bytes}`, i)
		case *h.State != i:
			return sizes, i, fmt.Errorf("state %d: its header says state %d; the states come in order, from 0", i, *h.State)
		case i > g:
			return sizes, i, fmt.Errorf("state %d: the benchmark's runs have %d stretches, so states 0 to %d", i, g, g)
		case *h.Size < 0 || *h.Size > int64(len(scratch)):
			return sizes, i, fmt.Errorf("state %d: %d bytes; the benchmark's states hold 0 to %d", i, *h.Size, len(scratch))
		}
		dst, keep := kept[i]
		if !keep {
			dst = scratch
		}
		if _, err := io.ReadFull(r, dst[:*h.Size]); err != nil {
			return sizes, i, fmt.Errorf("state %d: the stream ended within its %d bytes", i, *h.Size)
		}
		if keep {
			sizes[i] = int(*h.Size)
		}
	}
}

// markedReader reads r up to the first occurrence of mark, then reports
// io.EOF; drain reads the rest of r, counting the bytes after the mark.
type markedReader struct {
	r     io.Reader
	mark  []byte
	chunk []byte
	held  []byte // read from r and not yet returned; its end may begin the mark
	found bool   // the mark was read: held is all that comes before it
	late  int64  // bytes read after the mark
	err   error  // r's error, once met
}

func (m *markedReader) Read(p []byte) (int, error) {
	for {
		// Only the last bytes, fewer than the mark's, can begin it.
		ready := len(m.held) - (len(m.mark) - 1)
		if m.found || m.err != nil {
			ready = len(m.held)
		}
		if ready > 0 {
			n := copy(p, m.held[:ready])
			m.held = m.held[:copy(m.held, m.held[n:])]
			return n, nil
		}
		switch {
		case m.found:
			return 0, io.EOF
		case m.err != nil:
			return 0, m.err
		}
		m.fill()
	}
}

// fill reads once from r, looking for the mark in what it holds.
func (m *markedReader) fill() {
	n, err := m.r.Read(m.chunk)
	m.err = err
	if m.found {
		m.late += int64(n)
		return
	}
	m.held = append(m.held, m.chunk[:n]...)
	if i := bytes.Index(m.held, m.mark); i >= 0 {
		m.late += int64(len(m.held) - i - len(m.mark))
		m.held, m.found = m.held[:i], true
	}
}

// drain reads r to its end.
func (m *markedReader) drain() {
	for m.err == nil {
		m.fill()
	}
}

// stepHandover is what a run handed over for the step audit: its seed,
// the stretches drawn, and the files of the states kept, or the audit
// failure that takes their place.
type stepHandover struct {
	seed   int64
	drawn  []int
	states map[int]string
	fault  *d5list.Reason
}

// stepStates is what the window took of the run's states, once closed;
// the kept states are written into dir. An error is the runner's own.
func (w *window) stepStates(g int, dir string, seed int64) (stepHandover, error) {
	w.mu.Lock()
	in := w.statesIn
	w.statesIn.kept = nil
	w.mu.Unlock()
	fault := func(format string, args ...any) (stepHandover, error) {
		return stepHandover{fault: &d5list.Reason{Code: d5list.AuditMissing, Message: auditMessage(format, args...)}}, nil
	}
	switch {
	case in.err != nil:
		return stepHandover{}, in.err
	case !in.marked:
		return fault("the run logged no run_stop, so no state it handed over ends its window's work")
	case !in.found:
		return fault("the states the run wrote into $D5_STATES did not end within %s of the run's end", windowDrain)
	case in.late > 0:
		return fault("%d bytes of its states reached $D5_STATES after its run_stop, so they were written after the window closed: a run hands over every state before it logs run_stop", in.late)
	case in.format != nil:
		return fault("its $D5_STATES: %v", in.format)
	case in.arrived < g+1:
		return fault("it handed over %d of its %d states (0 to %d) through $D5_STATES before its run_stop: a run hands over its state before its first step and at the end of each of its %d stretches", in.arrived, g+1, g, g)
	}
	h := stepHandover{seed: seed, drawn: in.drawn, states: map[int]string{}}
	for i, b := range in.kept {
		p := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return stepHandover{}, err
		}
		h.states[i] = p
	}
	return h, nil
}
