package runner

import (
	"strings"
	"sync"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// logClockPoll is how often the runner looks at a run's log to time its
// lines: the error of LogS is at most about this.
const logClockPoll = time.Duration(d5list.LogClockPollS * float64(time.Second))

// logClock times the lines of a run's MLLOG as they arrive, by the
// runner's own clock: the competitor's code writes the timestamps in the
// log, the runner only believes when it saw the lines.
type logClock struct {
	mu          sync.Mutex
	start, stop time.Time
}

// line is a LineFunc for the tail of the run's log.
func (c *logClock) line(_ int, _ string, line string) {
	if !strings.Contains(line, mllog.KeyRunStart) && !strings.Contains(line, mllog.KeyRunStop) {
		return
	}
	evs, err := mllog.Parse(strings.NewReader(line), "")
	if err != nil || len(evs) != 1 {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch evs[0].Key {
	case mllog.KeyRunStart:
		if c.start.IsZero() {
			c.start = now
		}
	case mllog.KeyRunStop:
		if c.stop.IsZero() {
			c.stop = now
		}
	}
}

// measure fills clock's log fields: the time between run_start and
// run_stop arriving, 0 unless they arrived at least a poll apart.
func (c *logClock) measure(clock *d5list.RunClock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clock.CompetitorLog = true
	if c.start.IsZero() || c.stop.IsZero() {
		return
	}
	if d := c.stop.Sub(c.start); d >= logClockPoll {
		clock.LogS = d.Seconds()
	}
}
