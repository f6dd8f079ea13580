package verifier

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	d5list "github.com/deep500/d5list"
)

// CodeMLPerfRound is the Reason code of each round an error offers where
// the round of a submission cannot be told: its Message is the round
// ("5.0"), so that a client can offer them.
const CodeMLPerfRound = "mlperf_round"

// RoundUnknown says whether err is the refusal of a submission whose
// round cannot be told, which the caller completes with how to give it.
func RoundUnknown(err error) bool {
	for _, r := range d5list.ErrorReasons(err) {
		if r.Code == CodeMLPerfRound {
			return true
		}
	}
	return false
}

// roundUnknown refuses to guess: the rounds whose benchmarks fit the
// submission (all of them where none fits) are in the message and, one
// per Reason, in the error's reasons.
func roundUnknown(dir string, benchmarks []string, candidates []string) error {
	all := MLPerfRoundNames()
	why := "no folder name says it (vX.Y-... or a parent folder vX.Y)"
	offer := candidates
	switch {
	case len(benchmarks) > 0 && len(candidates) > 1:
		why += fmt.Sprintf(", and %s %s in several rounds (%s)", strings.Join(benchmarks, ", "), plural(len(benchmarks), "is", "are"), strings.Join(candidates, ", "))
	case len(benchmarks) > 0:
		why += fmt.Sprintf(", and no round d5list knows has %s", strings.Join(benchmarks, ", "))
		offer = all
	default:
		offer = all
	}
	e := d5list.Errorf(d5list.EINVALID, "%s: the MLPerf Training round cannot be told: %s; give the round, one of %s", dir, why, strings.Join(offer, ", "))
	for _, r := range offer {
		e.Reasons = append(e.Reasons, d5list.Reason{Code: CodeMLPerfRound, Message: r})
	}
	return e
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// roundsWith are the rounds that have every one of benchmarks.
func roundsWith(benchmarks []string) ([]string, error) {
	var out []string
	for _, name := range MLPerfRoundNames() {
		r, err := loadMLPerfRound(name)
		if err != nil {
			return nil, err
		}
		ok := len(benchmarks) > 0
		for _, b := range benchmarks {
			if _, has := r.Benchmarks[b]; !has {
				ok = false
			}
		}
		if ok {
			out = append(out, name)
		}
	}
	return out, nil
}

// roundOfBenchmarks is the one round that has every one of benchmarks;
// where several or none do, the round cannot be told and it refuses.
func roundOfBenchmarks(dir string, benchmarks []string) (*MLPerfRound, error) {
	rounds, err := roundsWith(benchmarks)
	if err != nil {
		return nil, err
	}
	if len(rounds) != 1 {
		return nil, roundUnknown(dir, benchmarks, rounds)
	}
	return loadMLPerfRound(rounds[0])
}

// checkMLPerfInput says what is wrong with a path given to check, in the
// words of the path as given: it does not exist, it is not a folder, or
// the folder cannot be read.
func checkMLPerfInput(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return d5list.Errorf(d5list.EINVALID, "%s: %s", path, ioReason(err))
	}
	if !st.IsDir() {
		return d5list.Errorf(d5list.EINVALID, "%s: not a folder: give a benchmark's result folder (result_*.txt) or a submission tree (systems/ and results/)", path)
	}
	f, err := os.Open(path)
	if err == nil {
		_, err = f.ReadDir(1)
		f.Close()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return d5list.Errorf(d5list.EINVALID, "%s: the folder cannot be read: %s", path, ioReason(err))
	}
	return nil
}

// ioReason is why a file or folder cannot be read, without its path
// (the caller names it as the user gave it).
func ioReason(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or folder"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		return "no such file or folder (a part of the path is a file, not a folder)"
	case errors.As(err, &errno):
		return errno.Error()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// fileError is a file that cannot be read, named as the caller knows it.
func fileError(name string, err error) error {
	return d5list.Errorf(d5list.EINVALID, "%s: cannot be read: %s", name, ioReason(err))
}

// reRoundFolder matches a folder holding a round's submissions, as
// MLCommons' repositories name them (training_results_v5.0) or v5.0.
var reRoundFolder = regexp.MustCompile(`(?:^|[_-])v(\d+\.\d+)$`)

// namedRound is the round given, else the one dir's name starts with
// (v3.1-...), else the one its parent folder names (v5.0/AMD,
// training_results_v5.0/AMD); nil when none names one.
func namedRound(dir, round, which string) (*MLPerfRound, error) {
	abs, _ := filepath.Abs(dir)
	if m := reRoundPrefix.FindStringSubmatch(filepath.Base(abs)); round == "" && m != nil {
		round = m[1]
	}
	if m := reRoundFolder.FindStringSubmatch(filepath.Base(filepath.Dir(abs))); round == "" && m != nil {
		round = m[1]
	}
	if round == "" {
		return nil, nil
	}
	if !slices.Contains(MLPerfRoundNames(), round) {
		e := d5list.Errorf(d5list.EINVALID, "%s: MLPerf Training round %s is not one d5list knows: give one of %s", dir, round, knownRounds())
		for _, r := range MLPerfRoundNames() {
			e.Reasons = append(e.Reasons, d5list.Reason{Code: CodeMLPerfRound, Message: r})
		}
		return nil, e
	}
	if which == "" {
		which = RulesRelease
	}
	return loadMLPerfRoundRules(round, which)
}
