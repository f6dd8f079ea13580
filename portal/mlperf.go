package portal

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/verifier"
)

// CheckMLPerf checks an uploaded MLPerf Training submission (a .tar.gz or
// .zip of one benchmark's result folder, or of a whole submission tree)
// with the rules `d5list check --mlperf` applies, so that the browser and
// the command line give the same answer: a *verifier.MLPerfReport or a
// *verifier.MLPerfTreeReport, judged by rules (verifier.RulesRelease, ""
// too, or verifier.RulesToday). Nothing is stored: the upload is unpacked
// into a scratch folder that is removed after.
func (s *Service) CheckMLPerf(ctx context.Context, body io.Reader, round, rules string) (any, error) {
	dir, err := os.MkdirTemp(s.cfg.ScratchDir, "d5list-mlperf-")
	if err != nil {
		return nil, d5list.Errorf(d5list.EINTERNAL, "scratch folder: %v", err)
	}
	defer os.RemoveAll(dir)
	root, ignored, err := bundle.ExtractMLPerf(body, dir, s.cfg.Limits)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep, _, err := verifier.CheckMLPerfPathRules(root, round, rules)
	if err != nil {
		return nil, uploadError(err, dir)
	}
	var warnings *[]d5list.Reason
	switch r := rep.(type) {
	case *verifier.MLPerfReport:
		nameUpload(r.Reasons, root)
		nameUpload(r.Warnings, root)
		warnings = &r.Warnings
	case *verifier.MLPerfTreeReport:
		warnings = &r.Warnings
	}
	for _, name := range ignored {
		*warnings = append(*warnings, d5list.Reason{Code: bundle.CodeMLPerfFolder, File: name,
			Message: "ignored: not a file MLPerf's checkers read (result_*.txt, system.json or systems/*.json, scaling.json, package_checker_params)"})
	}
	return rep, nil
}

// nameUpload names the upload where a reason names the scratch folder it
// was unpacked into, whose name is no use to the reader.
func nameUpload(list []d5list.Reason, root string) {
	for i := range list {
		if list[i].File == root {
			list[i].File = "(the folder)"
		}
	}
}

// uploadError names the upload's files as its archive does where err
// names them by the scratch folder they were unpacked into: the server's
// own paths are no business of the client's.
func uploadError(err error, dir string) error {
	var de *d5list.Error
	if !errors.As(err, &de) {
		return err
	}
	scrub := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, dir+string(filepath.Separator), ""), dir, "the upload")
	}
	out := &d5list.Error{Code: de.Code, Message: scrub(de.Message)}
	for _, r := range de.Reasons {
		r.File, r.Message = scrub(r.File), scrub(r.Message)
		out.Reasons = append(out.Reasons, r)
	}
	return out
}
