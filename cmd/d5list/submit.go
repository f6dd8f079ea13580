package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// defaultServer is the portal submit talks to when told none: `d5list
// serve`'s own default address.
const defaultServer = "http://127.0.0.1:8080"

func submitCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("submit", stderr)
	server := fs.String("server", envOr("D5LIST_SERVER", defaultServer), "portal URL (or D5LIST_SERVER)")
	token := fs.String("token", os.Getenv("D5LIST_TOKEN"), "API token (or D5LIST_TOKEN)")
	wait := fs.Bool("wait", false, "follow the submission until its verdict; exit 0 only when it is verified")
	waitTimeout := fs.Duration("wait-timeout", 2*time.Hour, "with --wait: give up after this long")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: d5list submit DIR|BUNDLE --server URL --token T [--wait [--wait-timeout 2h]]")
	}
	if strings.TrimSpace(*token) == "" {
		return fmt.Errorf("submit: no API token: pass --token or set D5LIST_TOKEN to one; log in at %s and make one on %s/account",
			strings.TrimRight(*server, "/"), strings.TrimRight(*server, "/"))
	}
	res, err := submit(ctx, pos[0], *server, *token)
	if err != nil {
		var apiErr *apiError
		if asAPIError(err, &apiErr) {
			fmt.Fprintf(stderr, "refused (%s): %s\n", apiErr.Code, apiErr.Message)
			for _, r := range apiErr.Reasons {
				fmt.Fprintln(stderr, "  "+formatReason(r))
			}
			return errSilent
		}
		return err
	}
	if res.Repeated {
		fmt.Fprintln(stdout, res.Message)
	}
	fmt.Fprintf(stdout, "submission %d %s\n%s\n", res.ID, res.Status, res.URL)
	if !*wait {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, *waitTimeout)
	defer cancel()
	final, err := followSubmission(ctx, *server, *token, res.ID, submitPoll, stdout)
	if err != nil {
		return fmt.Errorf("following submission %d: %w", res.ID, err)
	}
	printFindings(stdout, final)
	if final.Status != d5list.StatusVerified {
		fmt.Fprintf(stderr, "submission %d ended %s\n", res.ID, final.Status)
		return errSilent
	}
	fmt.Fprintln(stdout, verifiedLine(ctx, *server, res.ID, final))
	return nil
}

// verifiedLine says what a verified submission scored, as the portal
// measured it, and where it ranks.
func verifiedLine(ctx context.Context, server string, id int64, sub *followedSubmission) string {
	line := fmt.Sprintf("verified: submission %d", id)
	switch {
	case sub.Measured != nil && sub.Measured.Score.Valid && sub.Basis == d5list.BasisMeasured && sub.ValueText != "":
		// The value as the board and the entry page print it.
		line += fmt.Sprintf(", measured %s %s (olympic mean of the re-run)", sub.Measured.Score.Metric, sub.ValueText)
	case sub.Measured != nil && sub.Measured.Score.Valid:
		line += fmt.Sprintf(", measured %s %.6g (olympic mean of the re-run)", sub.Measured.Score.Metric, sub.Measured.Score.Value)
	}
	url := fmt.Sprintf("%s/api/v1/leaderboards/%s", strings.TrimRight(server, "/"), sub.Benchmark)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return line
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return line
	}
	defer resp.Body.Close()
	var board d5list.Leaderboard
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&board) != nil {
		return line
	}
	for _, e := range board.Entries {
		if e.SubmissionID == id {
			return line + fmt.Sprintf("; rank %d of %d on %s", e.Rank, len(board.Entries), sub.Benchmark)
		}
	}
	return line + fmt.Sprintf("; not on %s's default board (it shows each system's best entry)", sub.Benchmark)
}

// getSubmission reads one submission as token's user.
func getSubmission(ctx context.Context, url, token string) (*followedSubmission, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", url, resp.Status)
	}
	var sub followedSubmission
	if err := json.NewDecoder(resp.Body).Decode(&sub); err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	return &sub, nil
}

// submitPoll is how often `submit --wait` asks for the submission.
var submitPoll = 2 * time.Second

// followedSubmission is what `submit --wait` reads of GET
// /api/v1/submissions/{id}.
type followedSubmission struct {
	Status        d5list.Status   `json:"status"`
	Final         bool            `json:"final"`
	Reasons       []d5list.Reason `json:"reasons"`
	Attempt       int             `json:"attempt"`
	QueuePosition int             `json:"queue_position"`
	NoRunner      string          `json:"no_runner"`
	Benchmark     string          `json:"benchmark"`
	Measured      *d5list.Result  `json:"measured"`
	// Findings are Reasons in the entry page's words and figures; absent
	// from a portal older than them.
	Findings []templates.Finding `json:"findings"`
	// ValueText is the value the boards rank the entry by as they print
	// it; Basis says whether it is the re-run's.
	ValueText string `json:"value_text"`
	Basis     string `json:"basis"`
}

// followSubmission polls a submission until its status is final, printing
// each change of status or place in line, and returns the final state.
func followSubmission(ctx context.Context, server, token string, id int64, every time.Duration, out io.Writer) (*followedSubmission, error) {
	url := fmt.Sprintf("%s/api/v1/submissions/%d", strings.TrimRight(server, "/"), id)
	last := ""
	for {
		sub, err := getSubmission(ctx, url, token)
		if ctx.Err() != nil {
			// The wait ran out, whichever step of the request it cut.
			return nil, fmt.Errorf("no verdict yet: %w", ctx.Err())
		}
		if err != nil {
			return nil, err
		}
		line := string(sub.Status)
		switch {
		case sub.QueuePosition > 0:
			line += fmt.Sprintf(", place %d in line", sub.QueuePosition)
		case sub.Attempt > 1 && !sub.Final:
			line += fmt.Sprintf(", attempt %d", sub.Attempt)
		}
		if sub.NoRunner != "" {
			line += "\n" + sub.NoRunner
		}
		if line != last {
			fmt.Fprintln(out, line)
			last = line
		}
		if sub.Final {
			return sub, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no verdict yet (%s): %w", sub.Status, ctx.Err())
		case <-time.After(every):
		}
	}
}

type submitted struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
	URL    string `json:"url"`
	// Repeated: the portal had these files from us already, as entry ID,
	// and made nothing new of them (Message says so).
	Repeated bool   `json:"repeated"`
	Message  string `json:"message"`
}

type apiError struct {
	Status  int
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Reasons []d5list.Reason `json:"reasons"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

func asAPIError(err error, target **apiError) bool {
	e, ok := err.(*apiError)
	if ok {
		*target = e
	}
	return ok
}

// submit uploads a folder (packed on the fly) or a bundle file.
func submit(ctx context.Context, path, server, token string) (*submitted, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	file := path
	if st.IsDir() {
		tmp, err := os.MkdirTemp("", "d5list-submit-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		file = filepath.Join(tmp, "bundle.tar.gz")
		if err := packTo(path, file); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	server = strings.TrimRight(server, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, server+"/api/v1/submissions", f)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentTypeOf(f))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var body struct {
			Error apiError `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return nil, fmt.Errorf("%s answered %s", server, resp.Status)
		}
		body.Error.Status = resp.StatusCode
		return nil, &body.Error
	}
	var out submitted
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", server, err)
	}
	if strings.HasPrefix(out.URL, "/") {
		out.URL = server + out.URL
	}
	return &out, nil
}

// contentTypeOf tells zip from gzip by the first bytes and rewinds.
func contentTypeOf(f *os.File) string {
	var magic [2]byte
	n, _ := f.Read(magic[:])
	_, _ = f.Seek(0, io.SeekStart)
	if n == 2 && magic[0] == 'P' && magic[1] == 'K' {
		return "application/zip"
	}
	return "application/gzip"
}
