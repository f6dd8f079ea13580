package verifier

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

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
