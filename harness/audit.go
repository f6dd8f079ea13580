package harness

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"

	d5list "github.com/deep500/d5list"
)

// CommitmentKey is the MLLOG key of a section's commitment, whose value is
// the hex SHA-256 of its calls' digests and whose metadata.section names
// the section. Only commitments that arrive before run_stop count.
const CommitmentKey = "d5_commitment"

// MaxFullChecks bounds a full audit's checks of one section (an inference
// run's 100,000 batches): a section that skipped 1 % of its calls passes
// that many with probability e^-10.
const MaxFullChecks = 1024

// Challenge is which calls of each section the runner checks, drawn only
// after the run's window closed.
type Challenge map[string][]int

// JSON is the line the audit FIFO hands the run.
func (c Challenge) JSON() []byte {
	b, err := json.Marshal(map[string]Challenge{"sections": c})
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// Challenge draws, for each section a commitment arrived for in the
// window, the calls to check from the operating system's random source:
// nothing the run could have known while it ran. For a fresh seed's run
// auditsPerSection distinct calls (every call of a shorter section). A
// training task's runs are audited otherwise (StreamChallenge). A full audit (JobSpec.FullAudit, whatever the seed) picks every
// call of every section, or MaxFullChecks of a longer one.
func (t *Task) Challenge(committed map[string]string, fresh, full bool) Challenge {
	c := Challenge{}
	if t.Streamed() {
		return c
	}
	for _, s := range t.sections {
		if _, ok := committed[s.name]; !ok {
			continue
		}
		picked := map[int]bool{}
		if full {
			for len(picked) < min(MaxFullChecks, s.calls) {
				if s.calls <= MaxFullChecks {
					picked[len(picked)] = true
				} else {
					picked[randomInt(s.calls)] = true
				}
			}
		}
		for fresh && len(picked) < min(auditsPerSection(t.freshRuns), s.calls) {
			picked[randomInt(s.calls)] = true
		}
		for i := range s.calls {
			if picked[i] {
				c[s.name] = append(c[s.name], i)
			}
		}
	}
	return c
}

// randomInt is a number in [0, n) from the operating system's source.
func randomInt(n int) int {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		panic(err) // the OS's random source does not fail
	}
	return int(v.Int64())
}

// DigestsFile and OutputFile name what a run reveals for section index k
// (its place in the task) in $D5_REVEAL.
func DigestsFile(k int) string   { return strconv.Itoa(k) + ".digests" }
func OutputFile(k, i int) string { return strconv.Itoa(k) + "-" + strconv.Itoa(i) + ".out" }

// ReadFunc reads a file the run revealed, which must be exactly size bytes.
type ReadFunc func(name string, size int) ([]byte, error)

// Check checks what a run revealed against what it committed to in its
// window and against the runner's references: every section's digests
// must be the ones committed, and each challenged call's output must have
// its committed digest and be within the benchmark's tolerance of the
// runner's own computation of that call.
func (t *Task) Check(seed int64, committed map[string]string, challenge Challenge, read ReadFunc) *d5list.Audit {
	return t.CheckPaced(seed, committed, challenge, read, func() {})
}

// CheckPaced is Check, calling pace between its steps (a call's check, a
// minibatch of a recomputed epoch, each a few milliseconds): pace may
// block, so that a runner can hold its audit off another run's timed
// window.
func (t *Task) CheckPaced(seed int64, committed map[string]string, challenge Challenge, read ReadFunc, pace func()) *d5list.Audit {
	a := &d5list.Audit{Sections: []d5list.AuditSection{}}
	fail := func(code, format string, args ...any) {
		a.Failures = append(a.Failures, d5list.Reason{Code: code, Message: fmt.Sprintf(format, args...)})
	}
	for k, s := range t.sections {
		as := d5list.AuditSection{Name: s.name, Calls: s.calls, Checked: []int{}}
		want, ok := committed[s.name]
		if !ok {
			fail(d5list.AuditMissing, "%s: no commitment to its outputs arrived in the window (before run_stop)", s.name)
			a.Sections = append(a.Sections, as)
			continue
		}
		digests, err := read(DigestsFile(k), s.calls*8)
		if err != nil {
			fail(d5list.AuditMissing, "%s: the run did not reveal the digests of its %d calls after its window: %v", s.name, s.calls, err)
			a.Sections = append(a.Sections, as)
			continue
		}
		if commitment(digests) != want {
			fail(d5list.AuditMismatch, "%s: the digests the run revealed after its window are not the ones it committed to in it", s.name)
			a.Sections = append(a.Sections, as)
			continue
		}
		// First every asked output, each held to its committed digest; then
		// each is checked, with the others at hand (a training epoch is
		// recomputed from the state before it).
		revealed := map[int][]byte{}
		for _, i := range challenge[s.name] {
			if i < 0 || i >= s.calls {
				continue
			}
			out, err := read(OutputFile(k, i), s.outSize(i))
			if err != nil {
				fail(d5list.AuditMissing, "%s, call %d: the run did not reveal the output the runner asked for: %v", s.name, i, err)
				continue
			}
			if s.digest(out) != binary.BigEndian.Uint64(digests[i*8:]) {
				fail(d5list.AuditMismatch, "%s, call %d: the output the run revealed is not the one it committed to in its window", s.name, i)
				continue
			}
			if j, bad := nonFinite(out, s.elem); bad {
				// No reference decides against a NaN: an error of NaN is
				// neither within a tolerance nor beyond it. Honest work
				// never commits one (a run that diverges fails as not
				// converged, by its accuracy).
				fail(d5list.AuditNonFinite, "%s, call %d: value %d of the output the run committed to is %s", s.name, i, j, describe(out, s.elem, j))
				continue
			}
			revealed[i] = out
		}
		lookup := func(j int) ([]byte, bool) { b, ok := revealed[j]; return b, ok }
		var checks []callCheck
		whole := 0
		for _, i := range challenge[s.name] {
			out, ok := revealed[i]
			if !ok {
				continue
			}
			pace()
			if s.project != nil && whole >= fullChecks {
				rel, ok := s.project(seed, i, digests, out)
				checks = append(checks, callCheck{call: i, rel: rel, ok: ok, projected: true})
				continue
			}
			whole++
			rel, abs, ok := s.check(seed, i, digests, out, lookup)
			checks = append(checks, callCheck{call: i, rel: rel, abs: abs, ok: ok})
		}
		s.judge(&as, checks, revealed[s.calls-1], pace, fail)
		a.Sections = append(a.Sections, as)
	}
	return a
}

// judge records a section's checks in as, a failure for each that did not
// pass, and the runner's measure of the last state's quality where the
// section has one and last was revealed.
func (s section) judge(as *d5list.AuditSection, checks []callCheck, last []byte, pace func(), fail func(code, format string, args ...any)) {
	for _, c := range checks {
		as.Checked = append(as.Checked, c.call)
		if !c.projected {
			as.MaxRelError, as.MaxAbsError = finiteMax(as.MaxRelError, c.rel), finiteMax(as.MaxAbsError, c.abs)
		}
		switch {
		case math.IsNaN(c.rel):
			fail(d5list.AuditNonFinite, "%s, call %d: the runner's own computation of the call from the committed state is not finite", s.name, c.call)
		case !c.ok:
			fail(d5list.AuditMismatch, "%s, call %d: the output is %.3g (relative) from the runner's own computation of the call, over the benchmark's tolerance", s.name, c.call, c.rel)
		}
	}
	slices.Sort(as.Checked)
	if last != nil && s.final != nil {
		pace()
		if acc, ok := s.final(last); ok {
			as.Accuracy = &acc
		}
	}
}

// nonFinite reports the first value of out, read as float64s (elem 8) or
// float32s (elem 4), that is a NaN or an infinity.
func nonFinite(out []byte, elem int) (int, bool) {
	switch elem {
	case 8:
		for j := 0; j+8 <= len(out); j += 8 {
			v := math.Float64frombits(binary.LittleEndian.Uint64(out[j:]))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return j / 8, true
			}
		}
	case 4:
		for j := 0; j+4 <= len(out); j += 4 {
			v := float64(math.Float32frombits(binary.LittleEndian.Uint32(out[j:])))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return j / 4, true
			}
		}
	}
	return 0, false
}

// describe names value j of out ("NaN", "+Inf", "-Inf").
func describe(out []byte, elem, j int) string {
	var v float64
	if elem == 8 {
		v = math.Float64frombits(binary.LittleEndian.Uint64(out[j*8:]))
	} else {
		v = float64(math.Float32frombits(binary.LittleEndian.Uint32(out[j*4:])))
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// finiteMax keeps the larger value, an infinite or NaN error as the
// largest finite one (the portal stores finite numbers only).
func finiteMax(a, b float64) float64 {
	if math.IsNaN(b) || math.IsInf(b, 0) {
		b = math.MaxFloat64
	}
	return math.Max(a, b)
}
