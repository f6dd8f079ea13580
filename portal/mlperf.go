package portal

import (
	"context"
	"io"
	"os"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/verifier"
)

// CheckMLPerf checks an uploaded MLPerf Training result folder (a .tar.gz
// or .zip) with the rules `d5list check --mlperf` applies, so that the
// browser and the command line give the same answer. Nothing is stored:
// the folder is unpacked into a scratch folder that is removed after.
func (s *Service) CheckMLPerf(ctx context.Context, body io.Reader, round string) (*verifier.MLPerfReport, error) {
	dir, err := os.MkdirTemp(s.cfg.ScratchDir, "d5list-mlperf-")
	if err != nil {
		return nil, d5list.Errorf(d5list.EINTERNAL, "scratch folder: %v", err)
	}
	defer os.RemoveAll(dir)
	ignored, err := bundle.ExtractMLPerfFolder(body, dir, s.cfg.Limits)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep, err := verifier.CheckMLPerfRound(dir, round)
	if err != nil {
		return nil, err
	}
	for _, name := range ignored {
		rep.Warnings = append(rep.Warnings, d5list.Reason{Code: bundle.CodeMLPerfFolder, File: name,
			Message: "ignored: not a file MLPerf's checkers read (result_<i>.txt, system.json, scaling.json, package_checker_params)"})
	}
	// The scratch folder's name is no use to the reader: folder-level
	// reasons name the upload instead.
	for _, list := range [][]d5list.Reason{rep.Reasons, rep.Warnings} {
		for i := range list {
			if list[i].File == dir {
				list[i].File = "(the folder)"
			}
		}
	}
	return rep, nil
}
