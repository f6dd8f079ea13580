package runner

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	d5list "github.com/deep500/d5list"
)

// stepsSpec is evaluationSpec with a step audit of a toy training: its
// state is a number, each stretch adds 3 to it, and state 0 is the seed.
// The script recomputes each stretch from its first state and answers how
// far the run's last state is, in stretches; the last stretch's check also
// holds the state to the number the model file names after its accuracy.
func stepsSpec() d5list.JobSpec {
	spec := evaluationSpec()
	spec.Benchmark.Verify.Steps = &d5list.StepAudit{Stretches: 10, MaxStateBytes: 64, Script: `import json, sys
checks = json.load(open(sys.argv[1]))
assert checks["stretches"] == 10
for c in checks["checks"]:
    before = float(c["seed"]) if c["before"] is None else float(open(c["before"]).read())
    after = float(open(c["after"]).read())
    error = abs(after - (before + 3)) / 3
    if c["model"] is not None:
        error = max(error, abs(float(open(c["model"]).read().split()[1]) - after))
    print(json.dumps({"error": error}))
`}
	return spec
}

// stepsRun is a run of stepsSpec's toy training that departs from it as
// mode says, and hands its states over before its run_stop (after it, for
// mode "late").
func stepsRun(mode string) string {
	train := func(part string) string {
		return `python3 -I - "$gate" ` + part + ` <<'EOF'
import json, os, sys
mode, seed, part = "` + mode + `", json.loads(sys.argv[1])["seed"], sys.argv[2]
x = float(seed)
with open(os.environ["D5_STATES"] if part == "states" else os.devnull, "wb") as f:
    def put(i, body):
        f.write(b'{"state": %d, "size": %d}\n' % (i, len(body)) + body)
    put(0, repr(x).encode())
    for i in range(1, 11):
        if mode == "missing" and i == 6:
            break
        if not (mode == "skip" and i == 5):
            x += 3
        body = repr(x).encode()
        if mode == "nan" and i == 3:
            body = b"nan"
        if mode == "large" and i == 2:
            body = b"0" * 65
        if mode == "header" and i == 4:
            f.write(b'{"state": 4, "size": 3, "stretch": 9}\n')
        put(i, body)
if part == "model":
    with open(os.environ["D5_MODEL"], "w") as f:
        f.write("0.9375 %r" % (x + (1 if mode == "model" else 0)))
EOF
`
	}
	if mode == "late" {
		return modelRun(train("model"), train("states"))
	}
	return modelRun(train("states")+train("model"), "")
}

// A benchmark whose training loop is the competitor's own, with a step
// audit: the runner recomputes, with the benchmark's script, the stretches
// of steps it drew when each run's window opened (here all ten of the
// fresh run, the first and the last of the claimed one), from the states
// the run handed over as it trained. A stretch skipped, a NaN, a model
// other than the last state, states after run_stop, too few, too large or
// out of format each fail the run's audit, saying which and why.
func TestProcessRecomputesTheDrawnStretches(t *testing.T) {
	needBwrap(t)
	cases := []struct {
		mode       string
		code       string // "" for an honest run
		words      string
		claimedToo bool // the claimed run, which checks only the first and last stretches, fails too
	}{
		{mode: "honest"},
		{mode: "skip", code: d5list.AuditMismatch, words: "stretch 5 of its 10: its state at the stretch's end is 1 of the stretch's change away"},
		{mode: "nan", code: d5list.AuditNonFinite, words: "stretch 3 of its 10: the benchmark's step audit found its error NaN"},
		{mode: "model", code: d5list.AuditMismatch, words: "stretch 10 of its 10", claimedToo: true},
		{mode: "late", code: d5list.AuditMissing, words: "after its run_stop", claimedToo: true},
		{mode: "missing", code: d5list.AuditMissing, words: "handed over 6 of its 11 states", claimedToo: true},
		{mode: "large", code: d5list.AuditMissing, words: "state 2: 65 bytes; the benchmark's states hold 0 to 64", claimedToo: true},
		{mode: "header", code: d5list.AuditMissing, words: `state 4: its header line is not {"state": i, "size": bytes}`, claimedToo: true},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, stepsRun(c.mode)), WorkDir: workDir(t)})
			if err != nil {
				t.Fatal(err)
			}
			logs, err := p.Execute(context.Background(), stepsSpec())
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range logs {
				a := l.Clock.Audit
				if len(l.Clock.Breaches) != 0 || a == nil || len(a.Sections) != 2 || a.Sections[1].Name != stepsSectionName || a.Sections[1].Calls != 10 {
					t.Fatalf("run %d: breaches %+v, audit %+v; want no breach, the evaluation's and the steps' sections", l.Index, l.Clock.Breaches, a)
				}
				checked := a.Sections[1].Checked
				fresh := l.Index == 1
				if c.code == "" || (!fresh && !c.claimedToo) {
					want := "[1 10]"
					if fresh {
						want = "[1 2 3 4 5 6 7 8 9 10]"
					}
					if len(a.Failures) != 0 || fmt.Sprint(checked) != want || a.Sections[1].MaxRelError != 0 || a.CPUS <= 0 {
						t.Errorf("run %d: audit %+v; want stretches %s checked, none failed, and the CPU they took", l.Index, a, want)
					}
					continue
				}
				if len(a.Failures) != 1 || a.Failures[0].Code != c.code || !strings.Contains(a.Failures[0].Message, c.words) || len(a.Failures[0].Message) > maxAuditMessage {
					t.Errorf("run %d: failures %+v; want one %s naming %q", l.Index, a.Failures, c.code, c.words)
				}
			}
		})
	}
}

// The mark that ends a run's states is found wherever the reads split it,
// everything before it is the states' and everything after it is late.
func TestMarkedReaderSplitsAtTheMark(t *testing.T) {
	mark := make([]byte, 32)
	if _, err := rand.Read(mark); err != nil {
		t.Fatal(err)
	}
	before := bytes.Repeat([]byte("state bytes "), 10000)
	after := []byte("written after run_stop")
	stream := append(append(append([]byte{}, before...), mark...), after...)
	for _, reader := range []io.Reader{bytes.NewReader(stream), iotest.OneByteReader(bytes.NewReader(stream)), iotest.HalfReader(bytes.NewReader(stream))} {
		m := &markedReader{r: reader, mark: mark, chunk: make([]byte, 4096)}
		got, err := io.ReadAll(m)
		m.drain()
		if err != nil || !bytes.Equal(got, before) || !m.found || m.late != int64(len(after)) {
			t.Errorf("read %d bytes (%v), found %t, late %d; want the %d before the mark, and %d late", len(got), err, m.found, m.late, len(before), len(after))
		}
	}
	m := &markedReader{r: bytes.NewReader(before), mark: mark, chunk: make([]byte, 4096)}
	if got, _ := io.ReadAll(m); !bytes.Equal(got, before) || m.found {
		t.Errorf("without the mark: read %d bytes, found %t; want all %d and no mark", len(got), m.found, len(before))
	}
}

// Kept states are read into their own buffers and the others into the
// scratch one, in order; the header's fields are all checked.
func TestReadStateFrames(t *testing.T) {
	frame := func(i, size int, body string) string {
		return `{"state": ` + strconv.Itoa(i) + `, "size": ` + strconv.Itoa(size) + "}\n" + body
	}
	kept := map[int][]byte{1: make([]byte, 8), 2: make([]byte, 8)}
	sizes, arrived, err := readStateFrames(bufio.NewReaderSize(strings.NewReader(frame(0, 3, "abc")+frame(1, 2, "de")+frame(2, 5, "fghij")), maxStateHeader), 2, kept, make([]byte, 8))
	if err != nil || arrived != 3 || sizes[1] != 2 || sizes[2] != 5 || string(kept[1][:2]) != "de" || string(kept[2][:5]) != "fghij" || len(sizes) != 2 {
		t.Fatalf("sizes %v, arrived %d, %v, kept %v; want all three, states 1 and 2 kept", sizes, arrived, err, kept)
	}
	for _, c := range []struct{ stream, words string }{
		{frame(1, 1, "a"), "its header says state 1"},
		{frame(0, 1, "a") + frame(1, 1, "b") + frame(2, 1, "c") + frame(3, 1, "d"), "the benchmark's runs have 2 stretches"},
		{frame(0, 9, "123456789"), "9 bytes; the benchmark's states hold 0 to 8"},
		{frame(0, 4, "ab"), "ended within its 4 bytes"},
		{`{"state": 0}` + "\n", "not {"},
		{strings.Repeat(" ", 300), "longer than 256 bytes"},
		{`{"state": 0, "size": 1`, "ended in its header line"},
	} {
		_, _, err := readStateFrames(bufio.NewReaderSize(strings.NewReader(c.stream), maxStateHeader), 2, map[int][]byte{}, make([]byte, 8))
		if err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%.40q: %v; want an error naming %q", c.stream, err, c.words)
		}
	}
}
