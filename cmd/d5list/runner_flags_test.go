package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deep500/d5list/runner"
)

// The Slurm executor's GPUs per node and the process executor's image
// limits are the operator's to set from the command line; without the
// flags the image limits are runner.DefaultImageLimits, and a negative or
// zero value is refused before the runner starts.
func TestRunnerFlagsSetGPUsPerNodeAndImageLimits(t *testing.T) {
	cfg, err := parseRunnerFlags([]string{"--server", "http://portal", "--token", "d5r_x"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Slurm.GPUsPerNode != 0 || cfg.ImageLimits != runner.DefaultImageLimits() {
		t.Errorf("defaults: GPUs per node %d, image limits %+v; want 0 and %+v", cfg.Slurm.GPUsPerNode, cfg.ImageLimits, runner.DefaultImageLimits())
	}
	cfg, err = parseRunnerFlags([]string{"--slurm-gpus-per-node", "4", "--image-max-bytes", "2147483648",
		"--image-max-ratio", "10", "--image-floor-bytes", "536870912", "--image-max-entries", "1000"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := runner.ImageLimits{Bytes: 2 << 30, Ratio: 10, Floor: 512 << 20, Entries: 1000}
	if cfg.Slurm.GPUsPerNode != 4 || cfg.ImageLimits != want {
		t.Errorf("GPUs per node %d, image limits %+v; want 4 and %+v", cfg.Slurm.GPUsPerNode, cfg.ImageLimits, want)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--slurm-gpus-per-node", "-1"}, "--slurm-gpus-per-node must be 0 or more"},
		{[]string{"--image-max-bytes", "0"}, "must be positive"},
		{[]string{"--image-max-ratio", "-2"}, "must be positive"},
		{[]string{"--image-max-entries", "0"}, "must be positive"},
	} {
		cfg, err := parseRunnerFlags(append([]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x"}, tt.args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if err := runRunner(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
}

// The runner token comes from D5LIST_RUNNER_TOKEN or a file, where other
// users of the machine cannot read it as they can a command line; --token
// still works, with a warning.
func TestRunnerTokenFromEnvironmentOrFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("d5r_from_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) (runnerConfig, string, error) {
		var stderr strings.Builder
		cfg, err := parseRunnerFlags(args, &stderr)
		return cfg, stderr.String(), err
	}

	t.Setenv("D5LIST_RUNNER_TOKEN_FILE", "")
	t.Setenv("D5LIST_RUNNER_TOKEN", "d5r_from_env")
	if cfg, warned, err := parse(); err != nil || cfg.Token != "d5r_from_env" || warned != "" {
		t.Errorf("from the environment: token %q, warning %q, %v", cfg.Token, warned, err)
	}
	if cfg, warned, err := parse("--token-file", file); err != nil || cfg.Token != "d5r_from_file" || warned != "" {
		t.Errorf("from a file: token %q, warning %q, %v", cfg.Token, warned, err)
	}
	t.Setenv("D5LIST_RUNNER_TOKEN_FILE", file)
	if cfg, _, err := parse(); err != nil || cfg.Token != "d5r_from_file" {
		t.Errorf("from the file D5LIST_RUNNER_TOKEN_FILE names: token %q, %v", cfg.Token, err)
	}
	t.Setenv("D5LIST_RUNNER_TOKEN_FILE", "")
	cfg, warned, err := parse("--token", "d5r_on_the_line")
	if err != nil || cfg.Token != "d5r_on_the_line" || !strings.Contains(warned, "visible to every user") {
		t.Errorf("on the command line: token %q, warning %q, %v; want it used, with a warning", cfg.Token, warned, err)
	}

	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, warned, err := parse("--token-file", file); err != nil || !strings.Contains(warned, "readable by other users") {
		t.Errorf("a token file others may read: warning %q, %v", warned, err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--token-file", empty}, empty + " is empty"},
		{[]string{"--token-file", filepath.Join(dir, "missing")}, "missing: no such file"},
		{[]string{"--token", "d5r_x", "--token-file", file}, "not both"},
	} {
		if _, _, err := parse(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %q", c.args, err, c.want)
		}
	}
}

// A process runner whose --work folder the sandbox user cannot enter
// refuses to start, naming the folder, instead of leasing job after job
// and failing each three times.
func TestRunnerRefusesAWorkDirTheSandboxCannotEnter(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil || os.Geteuid() != 0 {
		t.Skip("runs drop to the sandbox user only where bubblewrap runs as root")
	}
	closed := t.TempDir()
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(closed, "work")
	var logs strings.Builder
	cfg, err := parseRunnerFlags([]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x", "--executor", "process", "--work", work}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = runRunner(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err == nil || !strings.Contains(err.Error(), "cannot enter "+closed) || !strings.Contains(err.Error(), "--work") {
		t.Fatalf("a runner with --work under a closed folder: %v, want a refusal naming %s", err, closed)
	}
	if strings.Contains(logs.String(), "runner starting") {
		t.Error("the runner started before refusing its work dir")
	}
}

// A GPU host's PyTorch often lives outside /usr (a conda or venv prefix):
// the operator binds it into the sandbox and puts its bin first on PATH.
// A relative or missing folder is refused as the flag is read, and a PATH
// folder the sandbox would not see before the runner starts.
func TestRunnerFlagsBindSoftwareOutsideUsr(t *testing.T) {
	prefix := t.TempDir()
	bin := filepath.Join(prefix, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseRunnerFlags([]string{"--sandbox-ro", prefix, "--sandbox-path", bin + ",/usr/local/bin"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Software; !slices.Equal(got.ReadOnly, []string{prefix}) || !slices.Equal(got.Path, []string{bin, "/usr/local/bin"}) {
		t.Errorf("software %+v, want %s bound and %s, /usr/local/bin on PATH", got, prefix, bin)
	}
	if err := cfg.Software.check(); err != nil {
		t.Errorf("check: %v", err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--sandbox-ro", "opt/conda"}, `"opt/conda" is not an absolute path`},
		{[]string{"--sandbox-ro", filepath.Join(prefix, "missing")}, "missing is not a folder on this machine"},
		{[]string{"--sandbox-path", filepath.Join(prefix, "nope")}, "nope is not a folder on this machine"},
	} {
		if _, err := parseRunnerFlags(tt.args, io.Discard); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
	cfg, err = parseRunnerFlags([]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x", "--sandbox-path", bin}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := "--sandbox-path " + bin + ": the sandbox does not see it"
	if err := runRunner(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a PATH folder not bound: %v, want %q", err, want)
	}
}
