package portal

import (
	"context"
	"os"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// SubmissionBundle returns the path of a submission's stored bundle, as
// it was uploaded.
func (s *Service) SubmissionBundle(ctx context.Context, user *d5list.User, id int64) (string, *d5list.Submission, error) {
	sub, err := s.downloadable(ctx, user, id)
	if err != nil {
		return "", nil, err
	}
	if sub.BundleSHA256 == "" || !s.blobs.Exists(sub.BundleSHA256) {
		return "", nil, d5list.Errorf(d5list.ENOTFOUND, "submission %d has no stored bundle", id)
	}
	return s.blobs.Path(sub.BundleSHA256), sub, nil
}

// downloadable is submission id where user may download its files: its
// bundle and the logs of its runs, claimed and re-run.
func (s *Service) downloadable(ctx context.Context, user *d5list.User, id int64) (*d5list.Submission, error) {
	sub, err := s.store.Submission(ctx, id)
	if err != nil {
		return nil, err
	}
	if !sub.MayView(user) {
		return nil, d5list.Errorf(d5list.ENOTFOUND, "submission %d not found", id)
	}
	if !sub.MayDownload(user) {
		return nil, d5list.Errorf(d5list.EFORBIDDEN, "submission %d is %s: its bundle and logs are its owner's and the organisers' to download until it is verified", id, sub.Status)
	}
	return sub, nil
}

// SubmissionRunLog returns the MLLOG file of one claimed run, read from
// the stored bundle.
func (s *Service) SubmissionRunLog(ctx context.Context, user *d5list.User, id int64, run int) ([]byte, error) {
	path, _, err := s.SubmissionBundle(ctx, user, id)
	if err != nil {
		return nil, err
	}
	b, err := bundle.Open(path, s.cfg.Limits)
	if err != nil {
		return nil, err
	}
	for _, r := range b.Results {
		if r.Index == run {
			return r.Data, nil
		}
	}
	return nil, d5list.Errorf(d5list.ENOTFOUND, "submission %d has no run %d", id, run)
}

// SubmissionRerunLog returns the MLLOG file of one run of the portal's
// re-run, as its runner reported it, with the same access as the claimed
// logs.
func (s *Service) SubmissionRerunLog(ctx context.Context, user *d5list.User, id int64, run int) ([]byte, error) {
	sub, err := s.downloadable(ctx, user, id)
	if err != nil {
		return nil, err
	}
	if sub.Measured != nil {
		for _, r := range sub.Measured.Runs {
			if r.Index == run && r.LogSHA256 != "" && s.blobs.Exists(r.LogSHA256) {
				return os.ReadFile(s.blobs.Path(r.LogSHA256))
			}
		}
	}
	return nil, d5list.Errorf(d5list.ENOTFOUND, "submission %d has no kept log of the portal's re-run of run %d", id, run)
}
