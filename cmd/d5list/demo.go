package main

import (
	"context"
	"github.com/deep500/d5list/catalog"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/store"
)

// demoSubmitter is what the demo needs of the portal: the same entry point
// as an upload over HTTP.
type demoSubmitter interface {
	Submit(ctx context.Context, user *d5list.User, body io.Reader) (*d5list.Submission, bool, error)
}

// runDemo makes a demo competitor and takes one submission through the
// normal pipeline: init, run, pack, submit; a runner then verifies it.
func runDemo(ctx context.Context, db *store.DB, svc demoSubmitter, log *slog.Logger) error {
	const benchmark = "l2-digits-mlp-cpu"
	user, err := db.EnsureUser(ctx, "demo", d5list.RoleCompetitor)
	if err != nil {
		return err
	}
	existing, err := db.Submissions(ctx, d5list.SubmissionFilter{BenchmarkID: benchmark, OwnerID: user.ID, Limit: 1})
	if err != nil {
		return err
	}
	if len(existing) > 0 {
		log.Info("demo entry already present", "submission", existing[0].ID)
		return nil
	}
	dir, err := os.MkdirTemp("", "d5list-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	folder := filepath.Join(dir, "submission")
	bs, err := catalog.Benchmarks()
	if err != nil {
		return err
	}
	if _, err := writeStarter(bs, benchmark, folder, "Demo Lab"); err != nil {
		return err
	}
	log.Info("demo: training the reference recipe", "runs", "5", "folder", folder)
	if err := runRecipe(ctx, folder, io.Discard); err != nil {
		return err
	}
	archive := filepath.Join(dir, "bundle.tar.gz")
	if err := packTo(folder, archive); err != nil {
		return err
	}
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	sub, _, err := svc.Submit(ctx, user, f)
	if err != nil {
		return err
	}
	log.Info("demo submission queued", "submission", sub.ID, "url", "/submissions/"+itoa64(sub.ID))
	return nil
}
