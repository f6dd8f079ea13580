package portal

import (
	"context"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// SubmissionBundle returns the path of a submission's stored bundle, as
// it was uploaded.
func (s *Service) SubmissionBundle(ctx context.Context, user *d5list.User, id int64) (string, *d5list.Submission, error) {
	sub, err := s.store.Submission(ctx, id)
	if err != nil {
		return "", nil, err
	}
	if !sub.MayView(user) {
		return "", nil, d5list.Errorf(d5list.ENOTFOUND, "submission %d not found", id)
	}
	if !sub.MayDownload(user) {
		return "", nil, d5list.Errorf(d5list.EFORBIDDEN, "submission %d is %s: its bundle is its owner's and the organisers' to download until it is verified", id, sub.Status)
	}
	if sub.BundleSHA256 == "" || !s.blobs.Exists(sub.BundleSHA256) {
		return "", nil, d5list.Errorf(d5list.ENOTFOUND, "submission %d has no stored bundle", id)
	}
	return s.blobs.Path(sub.BundleSHA256), sub, nil
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
