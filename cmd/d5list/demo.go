package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/store"
)

// demoSubmitter is what the demo needs of the portal: the same entry point
// as an upload over HTTP.
type demoSubmitter interface {
	Submit(ctx context.Context, user *d5list.User, body io.Reader) (*d5list.Submission, bool, error)
}

// runDemo makes a demo competitor and takes one submission through the
// normal pipeline: init, run, pack, submit; a runner then verifies it.
// told hears the demo entry's number, once it is queued or found.
func runDemo(ctx context.Context, db *store.DB, svc demoSubmitter, log *slog.Logger, told func(id int64)) error {
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
		told(existing[0].ID)
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
	told(sub.ID)
	return nil
}

// demoNotice tells the person who started `serve --demo` where to go,
// apart from the JSON logs: the portal's address, and the command that
// makes an organiser (the console's only way in on a new portal).
func demoNotice(base, data string) string {
	return fmt.Sprintf("d5list: open %s — the demo entry's link follows here once it is uploaded (the first start trains it, about a minute).\n"+
		"d5list: sign up at %s/signup to upload in the browser; make an organiser with:\n"+
		"  d5list admin user --data %s --user NAME --role organiser --password-file -   (type the password, then Enter)\n",
		base, base, shellWord(data))
}

// demoEntryNotice names the demo entry, and says how to log in as its
// competitor, who has no password.
func demoEntryNotice(base, data string, id int64, runners int) string {
	when := "once a runner verifies it (about a minute)"
	if runners == 0 {
		when = "once a runner verifies it: this portal has no in-process runner (--runners 0), start one with `d5list runner`"
	}
	return fmt.Sprintf("d5list: the demo entry is %s: %s/submissions/%d, on the board %s.\n"+
		"d5list: its competitor \"demo\" has no password; to log in as it:\n"+
		"  d5list admin user --data %s --user demo --password-file -   (type the password, then Enter)\n",
		leaderboard.SubmissionLabel(id), base, id, when, shellWord(data))
}

// browseURL is the address a browser on this machine opens for a listener
// on addr: an unspecified host (":8080", "0.0.0.0:8080") is this machine.
func browseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
