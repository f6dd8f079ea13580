package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/store"
)

// `d5list check` ends with the whole command that uploads what it
// checked: run as printed, with the token in D5LIST_TOKEN, it is accepted
// by the portal; without a token, submit says where to get one.
func TestCheckEndsWithACompleteSubmitCommand(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to read the printed command as a shell would")
	}
	p := startPortal(t, 0)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "my run")
	for _, args := range [][]string{{"init", "l0-gemm-cpu", dir, "--submitter", "Nina Lab"}, {"run", dir}} {
		if err := run(ctx, args, io.Discard, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"check", dir, "--server", p.url}, &out, io.Discard); err != nil {
		t.Fatalf("check: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`(?m)^  (d5list submit .*)$`).FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), p.url+"/account") {
		t.Fatalf("check's output has no submit command and no word on the token:\n%s", out.String())
	}
	// The shell splits and expands the command as it would for the user.
	cmd := exec.Command("sh", "-c", `printf '%s\n' `+strings.TrimPrefix(m[1], "d5list "))
	cmd.Env = append(os.Environ(), "D5LIST_TOKEN="+p.token)
	words, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh could not read %q: %v", m[1], err)
	}
	args := strings.Split(strings.TrimSuffix(string(words), "\n"), "\n")
	out.Reset()
	if err := run(ctx, args, &out, io.Discard); err != nil {
		t.Fatalf("the printed command %q (%q): %v", m[1], args, err)
	}
	if !strings.Contains(out.String(), "/submissions/") {
		t.Errorf("the printed command uploaded nothing: %s", out.String())
	}

	err = run(ctx, []string{"submit", dir, "--server", p.url, "--token", ""}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "D5LIST_TOKEN") || !strings.Contains(err.Error(), p.url+"/account") {
		t.Errorf("submit without a token: %v, want what to pass and where to make one", err)
	}
}

// lockedBuffer is a bytes.Buffer that serve's goroutines and the test may
// share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// `serve --demo` tells a person, in plain lines apart from the logs, what
// to open, where the demo entry is, and the commands that make an
// organiser and let one log in as the demo competitor; the commands work
// as printed.
func TestServeDemoSaysWhereToGo(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	// A demo entry from an earlier start, so that the demo does not train.
	db, err := store.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UpsertBenchmarks(ctx, bs); err != nil {
		t.Fatal(err)
	}
	demo, err := db.EnsureUser(ctx, "demo", d5list.RoleCompetitor)
	if err != nil {
		t.Fatal(err)
	}
	sub := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", OwnerID: demo.ID, Division: "closed", Availability: "available",
		Submitter: "Demo Lab", SystemName: "demo box", Framework: "numpy",
		Claimed: &d5list.Result{Runs: []d5list.RunMetrics{{TimeToTrain: 1}}}}
	if err := db.CreateSubmission(ctx, sub); err != nil {
		t.Fatal(err)
	}
	db.Close()

	notice := &lockedBuffer{}
	runCtx, cancel := context.WithCancel(ctx)
	ready, done := make(chan string, 1), make(chan error, 1)
	cfg := serveConfig{Addr: "127.0.0.1:0", DataDir: data, Runners: 0, Demo: true, MaxUpload: 1 << 20,
		Ready: func(a string) { ready <- a }, Notice: notice}
	go func() { done <- serve(runCtx, cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil))) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	base := "http://" + addr
	entry := base + "/submissions/" + itoa64(sub.ID)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(notice.String(), entry); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve --demo never named the demo entry %s:\n%s", entry, notice.String())
		}
	}
	text := notice.String()
	if !strings.HasPrefix(text, "d5list: open "+base+" ") || !strings.Contains(text, base+"/signup") {
		t.Errorf("the first line does not say what to open:\n%s", text)
	}
	if strings.Contains(text, "{") {
		t.Errorf("the notice is not plain lines:\n%s", text)
	}

	// The printed commands, run as printed (the name and the password
	// file filled in), make an organiser and give the demo competitor a
	// password.
	password := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(password, []byte("long enough password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmds := regexp.MustCompile(`(?m)^  d5list (admin user [^(\n]*?)\s*(\(.*)?$`).FindAllStringSubmatch(text, -1)
	if len(cmds) != 2 {
		t.Fatalf("want two admin commands (an organiser, the demo's password), got %d:\n%s", len(cmds), text)
	}
	for _, c := range cmds {
		args := strings.Fields(strings.ReplaceAll(c[1], "NAME", "olga"))
		for i := range args {
			if args[i] == "-" && i > 0 && args[i-1] == "--password-file" {
				args[i] = password
			}
		}
		var out bytes.Buffer
		if err := run(ctx, args, &out, io.Discard); err != nil {
			t.Fatalf("%q as printed: %v", c[1], err)
		}
	}
	db, err = store.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	olga, err := db.User(ctx, "olga")
	if err != nil || olga.Role != d5list.RoleOrganiser {
		t.Errorf("after the printed command, olga is %+v (%v), want an organiser", olga, err)
	}
	if _, err := db.Login(ctx, "demo", "long enough password"); err != nil {
		t.Errorf("the demo competitor cannot log in with the password the printed command set: %v", err)
	}
}
