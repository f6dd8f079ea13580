package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/harness"
	"github.com/deep500/d5list/mllog"
)

// A run of the competitor's code talks to the runner through FIFOs that
// the runner makes in a folder of its own, which the sandbox sees
// read-only (the run can neither remove, replace nor chmod them):
//
//   - the gate ($D5_GATE): the run opens it when it is ready to start
//     timing, and reads its seed from it. The runner writes the seed only
//     then, and that moment opens the run's timed window: nothing the run
//     did before could depend on its seed, so nothing it computed ahead
//     can stand in for the work the window times.
//   - the result log ($D5_RESULT_LOG): the run writes its MLLOG lines
//     into it and the runner reads them as they arrive, timing each by its
//     own clock. What arrived stays arrived: a FIFO cannot be truncated,
//     rewound or rewritten, so a run that logs a fast run_start/run_stop
//     pair and then its real log shows both pairs.
//
// The window closes when the run_stop line arrives; it opens at the gate,
// wherever run_start is. A run that never opens the gate, or logs no
// window or two, breaches the protocol: the verdict names the breach, and
// the run is timed by its whole wall time.
//
// For a benchmark the runner's harness runs (harness package) there are two
// more: the audit ($D5_AUDIT), which the run opens after run_stop and the
// runner answers only once run_stop has arrived, with the calls whose
// outputs it will check, drawn then among the sections the run committed
// to in its window; and the reveal ($D5_REVEAL), into which the run writes
// those outputs and its digests, read by the runner within what it asked.
// A training run has no audit to open: it writes its states into the
// reveal as it trains, and the runner reads them from the gate on, keeping
// those it drew when the window opened (harness.Task.ReadStream).
const (
	windowLogName    = "log"
	windowGateName   = "gate"
	windowAuditName  = "audit"
	windowRevealName = "reveal"
	windowModelName  = "model"
	// windowStatesName ($D5_STATES) is steps.go's.
)

// gatePayload is what the gate hands a run: one JSON line, with its seed
// only (not which of the job's runs it is: see runEnv).
type gatePayload struct {
	Seed int64 `json:"seed"`
}

// writeGateFile is the gate of a run that cannot reach the runner's FIFOs
// (a Slurm compute node): a file holding what the gate would hand it.
func writeGateFile(path string, seed int64) error {
	payload, err := json.Marshal(gatePayload{Seed: seed})
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(payload, '\n'), 0o644)
}

// window is one run's gate, result log and audit.
type window struct {
	dir        string
	logR, logW *os.File
	lw         *lineWriter
	maxBytes   int64
	onGate     func()
	audits     *auditor      // nil: no audits to hold off the window
	gateDone   chan struct{} // serveGate has returned
	readDone   chan struct{} // read has returned

	task             *harness.Task // nil: no audit
	fresh, full      bool
	auditDone        chan struct{} // serveAudit has returned
	revealR, revealW *os.File
	revealDone       chan struct{} // readReveal has returned, or was never started
	stopped          chan struct{} // closed when the first run_stop arrives
	over             chan struct{} // closed by close: the run's processes are gone

	mu            sync.Mutex // guards what follows
	closing       bool       // the run is over: a gate opened now is the runner's own
	holding       bool       // the window holds the audits (from its gate to its run_stop)
	gateAt        time.Time  // when the run opened its gate; zero if it never did
	starts, stops []time.Time
	committed     map[string]string // the sections' commitments that arrived before run_stop
	challenge     harness.Challenge // what the audit asked, once asked
	revealed      map[string][]byte // what the run revealed of it
	revealErr     error
	// A streamed task's run writes its states into the reveal FIFO while
	// it trains (harness.Task.ReadStream): streamRead counts the bytes the
	// runner took from the FIFO, streamLimit (from run_stop on; -1 before)
	// is the most the run can have written before it logged run_stop.
	streamRead  atomic.Int64
	streamLimit int64
	stream      *harness.Stream
	log         boundedBuffer
	// The model a run of a benchmark with an evaluation hands over
	// through $D5_MODEL, ended by the runner's mark at run_stop (model.go).
	modelR, modelW *os.File
	modelDone      chan struct{}
	modelIn        modelIntake
	// The states a run of a benchmark with a step audit hands over
	// through $D5_STATES as it trains (steps.go).
	statesR, statesW *os.File
	statesDone       chan struct{}
	statesIn         stateIntake
	gateErr          error // the runner could not serve the gate
	readErr          error
}

// windowRun is the run a window serves.
type windowRun struct {
	index int
	seed  int64
	fresh bool          // a seed the portal drew: the audit checks more of it
	full  bool          // the job's audit checks every call (JobSpec.FullAudit)
	task  *harness.Task // nil: a benchmark without the harness, no audit
	// maxBytes bounds the log; onLine gets each complete line as it
	// arrives, onGate is called when the gate opens (either may be nil).
	maxBytes int64
	onLine   LineFunc
	onGate   func()
	// audits, where set, are the job's audits of its earlier runs, held
	// from the gate opening to the first run_stop (or the run's end).
	audits *auditor
	// model, where set, takes the model the run writes into $D5_MODEL
	// for the benchmark's evaluation (model.go).
	model *modelSink
	// states, where set, takes the states the run writes into
	// $D5_STATES for the benchmark's step audit (steps.go).
	states *stateSink
}

// openWindow makes the run's FIFOs in dir (a folder it creates, which must
// not exist), owned by the runner and readable by the sandbox user: the
// gate (and audit) for reading only, the log for writing only. It starts
// waiting at the gate and reading the log.
func openWindow(dir string, run windowRun) (*window, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	fifos := map[string]os.FileMode{windowLogName: 0o622, windowGateName: 0o444}
	if run.task != nil {
		fifos[windowAuditName], fifos[windowRevealName] = 0o444, 0o622
	}
	if run.model != nil {
		fifos[windowModelName] = 0o622
	}
	if run.states != nil {
		fifos[windowStatesName] = 0o622
	}
	// Mkfifo's mode passes through the umask; the final modes are set
	// after, explicitly.
	for name, mode := range fifos {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			return nil, &os.PathError{Op: "mkfifo", Path: p, Err: err}
		}
		if err := os.Chmod(p, mode); err != nil {
			return nil, err
		}
	}
	w := &window{dir: dir, maxBytes: run.maxBytes, onGate: run.onGate, audits: run.audits, task: run.task, fresh: run.fresh, full: run.full,
		gateDone: make(chan struct{}), readDone: make(chan struct{}), auditDone: make(chan struct{}),
		revealDone: make(chan struct{}), stopped: make(chan struct{}), over: make(chan struct{}), committed: map[string]string{},
		streamLimit: -1, modelDone: make(chan struct{}), statesDone: make(chan struct{})}
	var err error
	if w.logR, w.logW, err = openReadSide(filepath.Join(dir, windowLogName)); err != nil {
		return nil, err
	}
	if run.task != nil {
		if w.revealR, w.revealW, err = openReadSide(filepath.Join(dir, windowRevealName)); err != nil {
			w.logR.Close()
			w.logW.Close()
			return nil, err
		}
	}
	opened := func(err error) error {
		if err != nil {
			for _, f := range []*os.File{w.logR, w.logW, w.revealR, w.revealW, w.modelR, w.modelW, w.statesR, w.statesW} {
				if f != nil {
					f.Close()
				}
			}
		}
		return err
	}
	if run.model != nil {
		if w.modelR, w.modelW, err = openReadSide(filepath.Join(dir, windowModelName)); err == nil {
			err = w.startModel(run.model)
		}
		if err != nil {
			return nil, opened(err)
		}
	} else {
		close(w.modelDone)
	}
	if run.states != nil {
		if w.statesR, w.statesW, err = openReadSide(filepath.Join(dir, windowStatesName)); err == nil {
			err = w.startStates(run.states)
		}
		if err != nil {
			return nil, opened(err)
		}
	} else {
		close(w.statesDone)
	}
	w.log.max = run.maxBytes
	w.lw = &lineWriter{w: &w.log, run: run.index, stream: d5list.StreamMLLOG, onLine: bothLines(w.arrived, run.onLine)}
	payload, err := json.Marshal(gatePayload{Seed: run.seed})
	if err != nil {
		return nil, err
	}
	go w.serveGate(filepath.Join(dir, windowGateName), append(payload, '\n'))
	switch {
	case run.task != nil && run.task.Streamed():
		// Drawn before the run starts and never told it: which of its
		// stretches the runner keeps and checks.
		w.challenge = run.task.StreamChallenge(run.fresh, run.full)
		go w.readStream(run.task.Keeps(w.challenge))
		close(w.auditDone)
	case run.task != nil:
		go w.serveAudit(filepath.Join(dir, windowAuditName))
	default:
		close(w.auditDone)
	}
	go w.read()
	return w, nil
}

// openReadSide opens the runner's side of a FIFO the run writes: its read
// side, which does not block for a writer, and a write side of the
// runner's own, which keeps the read side from reaching end-of-file before
// the run opens the FIFO (or between two of its writers) and is closed
// once the run is over.
func openReadSide(path string) (r, w *os.File, err error) {
	if r, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err != nil {
		return nil, nil, err
	}
	if w, err = os.OpenFile(path, os.O_WRONLY, 0); err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, w, nil
}

// serveAudit waits for the run to open its audit and for its run_stop to
// arrive, then draws the calls to check among the sections committed to
// in the window, hands them over, and reads what the run reveals.
func (w *window) serveAudit(path string) {
	defer close(w.auditDone)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	select {
	case <-w.stopped:
	case <-w.over:
		return
	}
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return
	}
	w.challenge = w.task.Challenge(w.committed, w.fresh, w.full)
	challenge := w.challenge
	w.mu.Unlock()
	go w.readReveal(challenge)
	_, _ = f.Write(challenge.JSON())
}

// readReveal reads what the run reveals of challenge, keeping only that,
// and drains the rest so that the run never blocks on it.
func (w *window) readReveal(challenge harness.Challenge) {
	defer close(w.revealDone)
	files, err := w.task.ReadRevealed(w.revealR, challenge)
	_, _ = io.Copy(io.Discard, w.revealR)
	w.mu.Lock()
	w.revealed, w.revealErr = files, err
	w.mu.Unlock()
}

// readStream reads the states a streamed task's run writes as it trains,
// keeping those keep names, and drains the rest.
func (w *window) readStream(keep map[int]bool) {
	defer close(w.revealDone)
	st := w.task.ReadStream(streamCounter{w.revealR, &w.streamRead}, keep, w.lateInStream)
	_, _ = io.Copy(io.Discard, w.revealR)
	w.mu.Lock()
	w.stream = st
	w.mu.Unlock()
}

// lateInStream reports whether the stream's first end bytes cannot all
// have been written before the run logged run_stop.
func (w *window) lateInStream(end int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.streamLimit >= 0 && end > w.streamLimit
}

// streamCounter counts the bytes read through it.
type streamCounter struct {
	r io.Reader
	n *atomic.Int64
}

func (c streamCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// serveGate waits for the run to open the gate, notes the time, and hands
// it the seed.
func (w *window) serveGate(path string, payload []byte) {
	defer close(w.gateDone)
	// Opening a FIFO for writing blocks until a reader opens it: this is
	// the run opening its gate (or close, letting the wait end).
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		w.mu.Lock()
		w.gateErr = err
		w.mu.Unlock()
		return
	}
	defer f.Close()
	w.mu.Lock()
	if !w.closing && w.audits != nil && len(w.stops) == 0 {
		// The earlier runs' audits stop before the seed is handed over,
		// which opens the window: the run waits for them at its gate (a
		// step of theirs at most), off its clock. Under w.mu, so that a
		// run_stop that arrives meanwhile releases what this holds.
		w.audits.hold()
		w.holding = true
	}
	now := time.Now()
	opened := !w.closing
	if opened {
		w.gateAt = now
	}
	w.mu.Unlock()
	if opened && w.onGate != nil {
		w.onGate()
	}
	// One line, well under PIPE_BUF: written at once, never blocking. A run
	// that closed the gate without reading gets EPIPE, its own loss.
	_, _ = f.Write(payload)
}

// read copies the log as it arrives until every writer has closed it.
func (w *window) read() {
	defer close(w.readDone)
	_, err := io.Copy(w.lw, w.logR)
	w.lw.flush()
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		w.mu.Lock()
		w.readErr = err
		w.mu.Unlock()
	}
}

// arrived times the run_start and run_stop lines as they arrive, and keeps
// the harness's commitments that arrive before run_stop.
func (w *window) arrived(_ int, _ string, line string) {
	if !strings.Contains(line, mllog.KeyRunStart) && !strings.Contains(line, mllog.KeyRunStop) && !strings.Contains(line, harness.CommitmentKey) {
		return
	}
	now := time.Now()
	evs, err := mllog.Parse(strings.NewReader(line), "")
	if err != nil || len(evs) != 1 {
		return
	}
	e := evs[0]
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e.Key {
	case mllog.KeyRunStart:
		w.starts = append(w.starts, now)
	case mllog.KeyRunStop:
		if len(w.stops) == 0 {
			close(w.stopped)
			w.releaseAudits()
			if w.task != nil && w.task.Streamed() {
				// What the run wrote before run_stop was read by now, is
				// in a read under way (one buffer at most), or waits in
				// the FIFO.
				w.streamLimit = w.streamRead.Load() + harness.StreamReadBuffer + int64(fifoUnread(w.revealR))
			}
			if w.modelR != nil {
				w.markModelEnd()
			}
			if w.statesR != nil {
				w.markStatesEnd()
			}
		}
		w.stops = append(w.stops, now)
	case harness.CommitmentKey:
		name, _ := e.Meta("section").(string)
		value, _ := e.Value.(string)
		if _, seen := w.committed[name]; len(w.stops) == 0 && !seen && len(w.committed) < maxCommitments {
			w.committed[name] = value
		}
	}
}

// fifoUnread is how many bytes wait in f's pipe (its capacity, 1 MiB at
// most, where it cannot be told).
func fifoUnread(f *os.File) int {
	n := -1
	// Through the raw descriptor: Fd would put the FIFO in blocking mode.
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			// TIOCINQ is FIONREAD: for a pipe, the bytes it holds unread.
			if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
				n = v
			}
		})
	}
	if n < 0 {
		return 1 << 20
	}
	return n
}

// maxCommitments bounds what a run can make the runner keep.
const maxCommitments = 64

// windowDrain bounds how long the runner reads a finished run's log: the
// run's processes are gone, so what is left is in the pipe already, unless
// something that escaped the run still holds the log open.
const windowDrain = 2 * time.Second

// close ends the window once the run's processes are gone: it shuts the
// gate (and the audit) if the run never opened it, reads the rest of the
// log, and returns the log, the window's measure (filled into clock:
// LogS, the breaches) and an error for a log the runner could not take
// (over its size limit). The audit's check is audit's, after.
func (w *window) close(clock *d5list.RunClock) ([]byte, error) {
	w.mu.Lock()
	w.closing = true
	if w.challenge == nil {
		close(w.revealDone) // no audit was asked: nothing reads the reveal
	}
	w.releaseAudits()
	w.mu.Unlock()
	close(w.over)
	// A reader of our own releases a gate, or an audit, the run never opened.
	for name, done := range map[string]chan struct{}{windowGateName: w.gateDone, windowAuditName: w.auditDone} {
		if fd, err := syscall.Open(filepath.Join(w.dir, name), syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
			<-done
			syscall.Close(fd)
		} else {
			<-done
		}
	}
	drain(w.logR, w.logW, w.readDone)
	if w.task != nil {
		drain(w.revealR, w.revealW, w.revealDone)
	}
	if w.modelR != nil {
		drain(w.modelR, w.modelW, w.modelDone)
	}
	if w.statesR != nil {
		drain(w.statesR, w.statesW, w.statesDone)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	clock.CompetitorLog = true
	clock.Breaches = w.breaches()
	if len(clock.Breaches) == 0 {
		// The gate's and the log's arrivals are timed by two goroutines: a
		// run_stop written right after the gate opened may be seen first.
		clock.LogS = max(w.stops[0].Sub(w.gateAt).Seconds(), 0)
	}
	if w.log.over {
		return nil, d5list.Errorf(d5list.ETOOLARGE, "the result log is larger than %d bytes", w.maxBytes)
	}
	if w.gateErr != nil {
		return nil, fmt.Errorf("serving the run's gate: %w", w.gateErr)
	}
	if w.readErr != nil {
		return nil, fmt.Errorf("reading the result log: %w", w.readErr)
	}
	return w.log.b, nil
}

// openedAt is when the run opened its gate (zero if it never did).
func (w *window) openedAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gateAt
}

// releaseAudits lets the audits the window holds go on; w.mu is held.
func (w *window) releaseAudits() {
	if w.holding {
		w.holding = false
		w.audits.release()
	}
}

// drain closes the runner's write side of a FIFO, lets its reader (done
// when it returns) read what is left, for windowDrain at most, and closes
// the read side.
func drain(r, w *os.File, done chan struct{}) {
	w.Close()
	select {
	case <-done:
	case <-time.After(windowDrain):
		r.SetReadDeadline(time.Now())
		<-done
	}
	r.Close()
}

// breaches are what the run did to its window that no honest run does.
func (w *window) breaches() []d5list.Reason {
	var b []d5list.Reason
	add := func(code, format string, args ...any) {
		b = append(b, d5list.Reason{Code: code, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case w.gateAt.IsZero():
		add(d5list.BreachGateNotOpened, "the run never opened $D5_GATE, so it never had its seed: the timed window opens when the run takes its seed there")
	case len(w.starts) == 0 || len(w.stops) == 0:
		add(d5list.BreachWindowMissing, "%d run_start and %d run_stop lines arrived in $D5_RESULT_LOG; a run logs one of each", len(w.starts), len(w.stops))
	case len(w.starts) > 1 || len(w.stops) > 1:
		add(d5list.BreachWindowRepeated, "%d run_start and %d run_stop lines arrived in $D5_RESULT_LOG; a run logs one of each, once: what it logged first stays logged", len(w.starts), len(w.stops))
	case w.stops[0].Before(w.starts[0]):
		add(d5list.BreachWindowMissing, "run_stop arrived before run_start")
	}
	return b
}

// boundedBuffer keeps what is written up to max bytes and notes the rest
// was cut, so a run cannot make the runner hold an unbounded log.
type boundedBuffer struct {
	b    []byte
	max  int64
	over bool
}

// Write takes all of p, keeping what fits: the log is read on to its end
// (a reader that stopped would leave the run blocked on a full pipe).
func (l *boundedBuffer) Write(p []byte) (int, error) {
	keep := p
	if room := l.max - int64(len(l.b)); int64(len(p)) > room {
		l.over = true
		keep = p[:max(room, 0)]
	}
	l.b = append(l.b, keep...)
	return len(p), nil
}

// audit checks what a harness run revealed against its commitments and
// the runner's references, calling pace between its steps
// (harness.Task.CheckPaced); nil for a benchmark without a harness.
func (w *window) audit(seed int64, pace func()) *d5list.Audit {
	if w.task == nil {
		return nil
	}
	w.mu.Lock()
	committed, challenge, revealed, err, stream := w.committed, w.challenge, w.revealed, w.revealErr, w.stream
	w.mu.Unlock()
	if w.task.Streamed() {
		return w.task.CheckStream(seed, stream, challenge, pace)
	}
	if challenge == nil {
		err = errors.New("the run never opened $D5_AUDIT after its run_stop")
	}
	read := harness.Revealed(revealed)
	return w.task.CheckPaced(seed, committed, challenge, func(name string, size int) ([]byte, error) {
		b, rerr := read(name, size)
		if rerr != nil && err != nil {
			rerr = err
		}
		return b, rerr
	}, pace)
}
