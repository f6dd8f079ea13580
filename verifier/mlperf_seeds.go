package verifier

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
)

// checkSeeds is MLPerf's seed checker (package_checker/seed_checker.py) on
// a closed-division folder's files, in the order the package checker
// sorts them: every file logs a seed, every seed is an integer as Python's
// int() reads one, and no two files log the same seed from the same
// source line (metadata file and lineno), which is how MLPerf tells a
// seed reused from one drawn afresh. A file with a line that does not
// parse gives up its seeds. With optional (the seed checker of rounds
// 1.0 to 4.0) a folder may log no seed at all, and a file without one
// fails only after a file that logs one.
func checkSeeds(logs []*mlperfLog, optional bool) []d5list.Reason {
	var out []d5list.Reason
	seen := map[string]string{}
	var seeded []string // the files read so far that log a seed
	for i, log := range logs {
		run := i
		fail := func(code string, line int, format string, args ...any) {
			out = append(out, d5list.Reason{Code: code, File: log.name, Line: line, Run: &run, Message: fmt.Sprintf(format, args...)})
		}
		if len(log.bad) > 0 {
			fail(CodeMissingSeed, log.bad[0].Line, "Error found when querying seeds from %s: Found parsing errors (line %d); the seed checker reads no seed from a file with a line that does not parse", log.name, log.bad[0].Line)
			continue
		}
		type record struct {
			site string
			seed int64
			line int
		}
		var records []record
		var broken string
		for _, ln := range log.lines {
			if ln.Key != "seed" {
				continue
			}
			src, ok1 := ln.Meta["file"]
			lineno, ok2 := ln.Meta["lineno"]
			seed, why := pyInt(ln.Value)
			switch {
			case !ok1 || !ok2:
				broken = fmt.Sprintf("line %d: seed without metadata file and lineno", ln.Line)
			case why != "":
				broken = fmt.Sprintf("line %d: seed %s: %s", ln.Line, pyRepr(ln.Value), why)
			}
			if broken != "" {
				break
			}
			records = append(records, record{site: pyStr(src) + ":" + pyRepr(pyNumOr(lineno)), seed: seed, line: ln.Line})
		}
		switch {
		case broken != "":
			fail(CodeMissingSeed, 0, "Error found when querying seeds from %s: %s", log.name, broken)
			continue
		case len(records) == 0 && optional && len(seeded) == 0:
		case len(records) == 0:
			last := 0
			if n := len(log.lines); n > 0 {
				last = log.lines[n-1].Line
			}
			if optional {
				fail(CodeMissingSeed, last, "Result file %s logs no seed. However, other result files, including %s, already logs some seeds.", log.name, strings.Join(seeded, ", "))
			} else {
				fail(CodeMissingSeed, last, "Result file %s logs no seed.", log.name)
			}
		default:
			seeded = append(seeded, log.name)
		}
		for _, r := range records {
			key := fmt.Sprintf("%s\x00%d", r.site, r.seed)
			if other, dup := seen[key]; dup {
				fail(CodeDuplicateSeed, r.line, "Result file %s logs seed %d on %s. However, result file %s already logs the same seed on the same line.", log.name, r.seed, r.site, other)
				continue
			}
			seen[key] = log.name
		}
	}
	return out
}

// pyInt is Python's int() of a logged value: a number truncated, a string
// of digits read, anything else refused with why.
func pyInt(v any) (int64, string) {
	switch x := pyNum(v).(type) {
	case int64:
		return x, ""
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, "cannot convert float " + pyRepr(x) + " to integer"
		}
		return int64(x), ""
	}
	if s, ok := v.(string); ok {
		n, err := strconv.ParseInt(strings.TrimSpace(strings.ReplaceAll(s, "_", "")), 10, 64)
		if err == nil {
			return n, ""
		}
		return 0, "invalid literal for int() with base 10: " + pyRepr(s)
	}
	return 0, "int() argument must be a string or a number, not '" + pyType(v) + "'"
}

// pyNumOr is v as a number where it is one (so that a lineno of 7 and 7.0
// name the same line, as Python's == has them), else v.
func pyNumOr(v any) any {
	if f, ok := pyFloat(v); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return v
}
