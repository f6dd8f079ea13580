package verifier

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// mlperfLog is one result file as MLPerf's checkers read it.
type mlperfLog struct {
	path  string
	name  string // result_3.txt
	lines []ruleLine
	// decoded is the bytes of values and metadata its lines hold.
	decoded int
	// bad are the lines that do not parse: MLCommons' parser keeps the
	// others and the compliance checker fails the file.
	bad []d5list.Reason
}

// readMLPerfLog streams one result file through the parser of the round's
// format, keeping its lines and not its bytes.
func readMLPerfLog(path, format string, lim mllog.Limits) (*mlperfLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	defer f.Close()
	log := &mlperfLog{path: path, name: filepath.Base(path)}
	var r io.Reader = f
	if format == formatMLL {
		r = mllAsMLLOG(f)
	}
	events, perr := mllog.Within(r, log.name, lim)
	if perr != nil {
		var de *d5list.Error
		if !errors.As(perr, &de) {
			return nil, perr
		}
		log.bad = de.Reasons
	}
	scale := 1.0
	if format == formatMLL {
		scale = 1000 // the MLL format's timestamps are seconds
	}
	log.lines = make([]ruleLine, len(events))
	log.decoded = mllog.DecodedBytes(events)
	for i, e := range events {
		log.lines[i] = ruleLine{Key: e.Key, Value: e.Value, Meta: e.Metadata, Time: float64(e.TimeMS) / scale, Line: e.Line}
		if log.lines[i].Meta == nil {
			log.lines[i].Meta = map[string]any{}
		}
	}
	return log, nil
}

// The log format of MLPerf Training 0.6, as its checker's parser reads it:
// ":::MLL <seconds> <key>: {"value": ..., "metadata": {...}}", anything
// before ":::MLL" ignored.
var mllLine = regexp.MustCompile(`^:::MLL ([\d.]+) ([A-Za-z0-9_]+) ?:\s+(\{.*\})\s*$`)

// mllAsMLLOG rewrites each MLL line as the MLLOG line of the same event,
// line for line, so that one parser reads both formats and line numbers
// stay the file's. A line with ":::MLL" that does not match fails to
// parse, as it does for MLPerf.
func mllAsMLLOG(r io.Reader) io.Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), mllog.MaxLineBytes)
	return &mllReader{sc: sc}
}

type mllReader struct {
	sc      *bufio.Scanner
	pending []byte
}

func (m *mllReader) Read(p []byte) (int, error) {
	for len(m.pending) == 0 {
		if !m.sc.Scan() {
			if err := m.sc.Err(); err != nil {
				return 0, err
			}
			return 0, io.EOF
		}
		m.pending = append(m.pending[:0], mllRewrite(m.sc.Bytes())...)
	}
	n := copy(p, m.pending)
	m.pending = m.pending[n:]
	return n, nil
}

func mllRewrite(line []byte) []byte {
	i := bytes.LastIndex(line, []byte(":::MLL"))
	if i < 0 {
		return []byte("\n")
	}
	line = bytes.TrimSpace(line[i:])
	if m := mllLine.FindSubmatch(line); m != nil {
		secs, err := strconv.ParseFloat(string(m[1]), 64)
		body := bytes.TrimSpace(m[3])
		if err == nil && len(body) > 2 {
			return fmt.Appendf(nil, "%s{\"time_ms\": %s, \"key\": %q, %s\n", mllog.Prefix, strconv.FormatFloat(secs*1000, 'f', -1, 64), m[2], body[1:])
		}
	}
	return []byte(mllog.Prefix + "not an MLL line: " + strconv.Quote(string(line)) + "\n")
}

// mlperfResultFiles are the folder's result_*.txt, sorted by name as the
// package checker sorts them.
func mlperfResultFiles(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "result_*.txt"))
	if err != nil {
		return nil, err
	}
	var files []string
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			files = append(files, p)
		}
	}
	sort.Strings(files)
	return files, nil
}

// readMLPerfLogs reads a folder's result files, as many at once as there
// are processors (parsing is most of a check's time), and stops starting
// files once they hold more events together than lim allows.
func readMLPerfLogs(dir string, files []string, format string, lim ReadLimits) ([]*mlperfLog, error) {
	logs := make([]*mlperfLog, len(files))
	errs := make([]error, len(files))
	var events atomic.Int64
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, f := range files {
		slots <- struct{}{}
		if events.Load() > int64(lim.Events) {
			<-slots
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			logs[i], errs[i] = readMLPerfLog(f, format, lim.File)
			if errs[i] == nil {
				events.Add(int64(len(logs[i].lines)))
			}
		}()
	}
	wg.Wait()
	total, decoded := 0, 0
	for i, log := range logs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if log == nil {
			total = lim.Events + 1
		} else {
			total, decoded = total+len(log.lines), decoded+log.decoded
		}
		if tooMuch := lim.tooMuch(total, decoded); tooMuch != "" {
			return nil, d5list.Errorf(d5list.ETOOLARGE, "%s: the result files up to %s hold %s together; the rest is not read (an upload takes what MLPerf's published folders hold but the largest, which d5list check reads from your disk)", dir, filepath.Base(files[i]), tooMuch)
		}
	}
	return logs, nil
}

// folderBenchmark is the submission_benchmark most files log first: a
// lone folder's benchmark, which a submission tree gives by its name.
func folderBenchmark(logs []*mlperfLog) string {
	votes := map[string]int{}
	for _, log := range logs {
		for _, ln := range log.lines {
			if ln.Key == "submission_benchmark" {
				if s, ok := ln.Value.(string); ok {
					votes[s]++
				}
				break
			}
		}
	}
	best := ""
	for _, b := range slices.Sorted(maps.Keys(votes)) {
		if votes[b] > votes[best] {
			best = b
		}
	}
	return best
}

// folderDivision is system.json's division, as the package checker reads
// it, else what the logs' submission_division says.
func folderDivision(dir string, logs []*mlperfLog) string {
	if data, err := os.ReadFile(filepath.Join(dir, "system.json")); err == nil {
		var sys struct {
			Division any `json:"division"`
		}
		if json.Unmarshal(data, &sys) == nil && sys.Division != nil {
			return pyStr(sys.Division)
		}
	}
	for _, log := range logs {
		for _, ln := range log.lines {
			if ln.Key == "submission_division" {
				return pyStr(ln.Value)
			}
		}
	}
	return ""
}
