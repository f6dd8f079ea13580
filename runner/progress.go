package runner

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	d5list "github.com/deep500/d5list"
)

// ProgressQueue is the optional side of a Queue that takes live progress:
// batches of a job's output lines, under the job's lease secret.
type ProgressQueue interface {
	Progress(ctx context.Context, jobID int64, secret string, lines []d5list.LogLine) error
}

type linesKey struct{}

// WithLines returns a context whose executor runs report every output
// line to fn as well as to their own OnLine: this is how the agent
// streams one job's progress through an executor shared by its agents.
func WithLines(ctx context.Context, fn LineFunc) context.Context {
	return context.WithValue(ctx, linesKey{}, fn)
}

// LinesFrom returns the line sink WithLines put in ctx, or nil.
func LinesFrom(ctx context.Context) LineFunc {
	fn, _ := ctx.Value(linesKey{}).(LineFunc)
	return fn
}

func bothLines(a, b LineFunc) LineFunc {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(run int, stream, line string) {
		a(run, stream, line)
		b(run, stream, line)
	}
}

// Progress batching: a batch goes out every ProgressInterval, or as soon
// as ProgressBatch lines wait. While the portal is slow, at most
// progressBacklog lines wait; older ones are dropped (and counted in a
// marker line), since a live tail is worth its latest lines.
var (
	ProgressInterval = time.Second
	ProgressBatch    = 100
)

const progressBacklog = 2000

// progressStream collects one job's lines and sends them in batches.
type progressStream struct {
	queue  ProgressQueue
	jobID  int64
	secret string
	log    *slog.Logger

	sendMu sync.Mutex // one batch in flight, so that no line goes twice

	mu      sync.Mutex
	pending []d5list.LogLine
	dropped int
	full    chan struct{} // signalled when a batch is ready
	stopped bool
}

func newProgressStream(q ProgressQueue, lease *d5list.Lease, log *slog.Logger) *progressStream {
	return &progressStream{queue: q, jobID: lease.Job.ID, secret: lease.Secret, log: log, full: make(chan struct{}, 1)}
}

// line is the LineFunc of the job's runs.
func (p *progressStream) line(run int, stream, text string) {
	if len(text) > d5list.MaxLogLineBytes {
		text = cutUTF8(text, d5list.MaxLogLineBytes) + " [cut]"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.pending = append(p.pending, d5list.LogLine{Run: run, Stream: stream, Text: text, Time: time.Now()})
	if len(p.pending) > progressBacklog {
		n := len(p.pending) - progressBacklog
		p.dropped += n
		p.pending = append(p.pending[:0], p.pending[n:]...)
	}
	if len(p.pending) >= ProgressBatch {
		select {
		case p.full <- struct{}{}:
		default:
		}
	}
}

// run sends a batch every ProgressInterval, or as soon as one is full,
// until ctx ends; close sends the rest.
func (p *progressStream) run(ctx context.Context) {
	t := time.NewTicker(ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.full:
		}
		if !p.flush(ctx) {
			return
		}
	}
}

// flush sends the waiting lines, batch by batch; false means the portal
// wants no more (the job is no longer held).
func (p *progressStream) flush(ctx context.Context) bool {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	for {
		p.mu.Lock()
		if p.dropped > 0 {
			marker := d5list.LogLine{Stream: d5list.StreamStderr, Time: time.Now(),
				Text: "[d5list runner: " + strconv.Itoa(p.dropped) + " lines dropped while the portal was slow]"}
			p.pending = append([]d5list.LogLine{marker}, p.pending...)
			p.dropped = 0
		}
		n := min(len(p.pending), ProgressBatch)
		// The batch leaves pending while it is in flight, so that lines
		// dropped meanwhile are never the ones being sent.
		batch := append([]d5list.LogLine(nil), p.pending[:n]...)
		p.pending = p.pending[n:]
		p.mu.Unlock()
		if n == 0 {
			return true
		}
		err := p.queue.Progress(ctx, p.jobID, p.secret, batch)
		switch d5list.ErrorCode(err) {
		case "":
		case d5list.EINVALID, d5list.ETOOLARGE:
			// Refused lines are not sent again: progress is best effort.
			p.log.Warn("progress refused", "job", p.jobID, "err", err)
		case d5list.ECONFLICT, d5list.EFORBIDDEN:
			// The lease is gone; the heartbeat stops the run.
			p.mu.Lock()
			p.stopped, p.pending = true, nil
			p.mu.Unlock()
			return false
		default:
			// The portal is unreachable: the batch goes back in front for
			// the next tick, within the backlog.
			p.mu.Lock()
			p.pending = append(batch, p.pending...)
			if over := len(p.pending) - progressBacklog; over > 0 {
				p.dropped += over
				p.pending = p.pending[over:]
			}
			p.mu.Unlock()
			if ctx.Err() == nil {
				p.log.Debug("sending progress", "job", p.jobID, "err", err)
			}
			return true
		}
	}
}

// close sends the last lines; the runs have ended.
func (p *progressStream) close(ctx context.Context) {
	ctx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	p.flush(ctx)
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// lineWriter passes what is written to w and, line by line, to onLine:
// the builtin executor's MLLOG as it is written, a file another process
// writes as it grows. Lines longer than MaxLogLineBytes are cut.
type lineWriter struct {
	w      io.Writer
	run    int
	stream string
	onLine LineFunc
	buf    []byte
	cut    bool // the current line was cut; skip to its end
}

func (l *lineWriter) Write(b []byte) (int, error) {
	n, err := l.w.Write(b)
	for _, c := range b[:n] {
		if c == '\n' {
			if !l.cut {
				l.onLine(l.run, l.stream, string(bytes.TrimSuffix(l.buf, []byte("\r"))))
			}
			l.buf, l.cut = l.buf[:0], false
			continue
		}
		if l.cut {
			continue
		}
		if len(l.buf) == d5list.MaxLogLineBytes {
			l.onLine(l.run, l.stream, cutUTF8(string(l.buf), d5list.MaxLogLineBytes)+" [cut]")
			l.buf, l.cut = l.buf[:0], true
			continue
		}
		l.buf = append(l.buf, c)
	}
	return n, err
}

// flush passes on a last line without its newline.
func (l *lineWriter) flush() {
	if len(l.buf) > 0 && !l.cut {
		l.onLine(l.run, l.stream, string(l.buf))
	}
	l.buf, l.cut = l.buf[:0], false
}

// tailFile passes the lines of a file another process writes (one that
// may not exist yet) to onLine as they appear, as stream, looking every
// poll. The
// returned stop reads what is left, passes the last line and returns once
// done.
func tailFile(path string, run int, stream string, onLine LineFunc, poll time.Duration) (stop func()) {
	if poll <= 0 {
		poll = time.Second
	}
	lw := &lineWriter{w: io.Discard, run: run, stream: stream, onLine: onLine}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var f *os.File
		defer func() {
			if f != nil {
				f.Close()
			}
		}()
		read := func() {
			if f == nil {
				var err error
				// The file is the run's to replace: read it as readResult
				// does, never through a link or into a FIFO.
				if f, err = openRunFile(path); err != nil {
					return
				}
			}
			_, _ = io.Copy(lw, f)
		}
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-quit:
				read()
				lw.flush()
				return
			case <-t.C:
				read()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}
