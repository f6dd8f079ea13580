package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// hostVersions is what SandboxPython says of its Python and torch; the
// test skips without torch.
func hostVersions(t *testing.T) (python, torch string) {
	t.Helper()
	out, err := exec.Command(SandboxPython, "-c", "import platform, torch; print(platform.python_version()); print(torch.__version__)").Output()
	if err != nil {
		t.Skipf("%s has no torch (apt-get install python3-torch): nothing to detect", SandboxPython)
	}
	f := strings.Fields(string(out))
	return f[0], f[1]
}

func TestFrameworkLabels(t *testing.T) {
	python, torch := hostVersions(t)
	labels := FrameworkLabels(context.Background())
	if labels["framework.torch"] != torch || labels["framework.python"] != python {
		t.Fatalf("labels %v, want framework.torch=%s and framework.python=%s", labels, torch, python)
	}
}

// Where the operator puts a Python outside /usr first on the sandbox's
// PATH (--sandbox-path), the labels are that Python's, probed with the
// same PATH a run gets; a folder with no python3 is passed over.
func TestFrameworkLabelsOfThePythonOnTheSandboxPath(t *testing.T) {
	empty, venv := t.TempDir(), t.TempDir()
	fake := "#!/bin/sh\necho \"{\\\"framework.torch\\\": \\\"9.9+venv\\\", \\\"framework.python\\\": \\\"$PATH\\\"}\"\n"
	if err := os.WriteFile(filepath.Join(venv, "python3"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	labels := FrameworkLabels(context.Background(), empty, venv)
	if want := empty + ":" + venv + ":/usr/local/bin:/usr/bin:/bin"; labels["framework.torch"] != "9.9+venv" || labels["framework.python"] != want {
		t.Fatalf("labels %v, want framework.torch=9.9+venv, probed with PATH=%s", labels, want)
	}
}

// A process job records, with every run, the versions the python3 of its
// own sandbox reports (once per job) and the variables the runner set in
// the sandbox.
func TestProcessRecordsEnvironment(t *testing.T) {
	needBwrap(t)
	python, torch := hostVersions(t)
	p, err := NewProcess(ProcessOptions{
		Fetch:   fixtureBundle(t, "#!/bin/sh\necho ran > \"$D5_RESULT_LOG\"\n"),
		WorkDir: workDir(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), testSpec(11, 12))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		env := l.Clock.Environment
		if env["framework.python"] != python || env["framework.torch"] != torch {
			t.Errorf("run %d recorded %v, want framework.python=%s and framework.torch=%s as %s says", l.Index, env, python, torch, SandboxPython)
		}
		if env["env.D5_GATE"] != "/d5/ctl/gate" || env["env.PATH"] == "" || env["env.D5_RESULT_LOG"] != "/d5/ctl/log" {
			t.Errorf("run %d recorded the variables %v, want the sandbox's own", l.Index, env)
		}
		if _, ok := env["env.D5_SEED"]; ok {
			t.Errorf("run %d was given its seed in its environment, before its window: %v", l.Index, env)
		}
		if _, ok := env["env.CUDA_VISIBLE_DEVICES"]; ok {
			t.Errorf("run %d of a CPU job was given GPUs: %v", l.Index, env)
		}
	}
}

// The probe reports the interpreter's own versions, whatever the run left
// where a plain python3 would look first: a usercustomize.py under its
// $HOME, which would print a forged torch before the probe ran. The
// record of the runner's own sandbox is kept for other competitors' jobs.
func TestProbeIgnoresTheBundlesAndTheRunsPython(t *testing.T) {
	needBwrap(t)
	python, torch := hostVersions(t)
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS("testdata/process-bundle")); err != nil {
		t.Fatal(err)
	}
	forged := "import sys\nsys.stdout.write('{\"framework.torch\": \"forged\", \"framework.python\": 1e300}\\n')\nsys.exit(0)\n"
	script := "#!/bin/sh\nsite=\"$HOME/.local/lib/python3.$(python3 -c 'import sys; print(sys.version_info[1])')/site-packages\"\n" +
		"mkdir -p \"$site\"\nprintf '%s' \"" + strings.ReplaceAll(forged, `"`, `\"`) + "\" > \"$site/usercustomize.py\"\necho ran > \"$D5_RESULT_LOG\"\n"
	if err := os.WriteFile(filepath.Join(dir, "code", "run.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := bundle.Pack(dir, &buf); err != nil {
		t.Fatal(err)
	}
	p, err := NewProcess(ProcessOptions{Fetch: fetchOf(buf.Bytes()), WorkDir: workDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), testSpec(1))
	if err != nil {
		t.Fatal(err)
	}
	if env := logs[0].Clock.Environment; env["framework.python"] != python || env["framework.torch"] != torch {
		t.Errorf("recorded %v, want framework.python=%s and framework.torch=%s as %s says", env, python, torch, SandboxPython)
	}
}

// In a recipe's image the versions are the image's: the probe runs the
// python3 on the image's PATH (here a static stand-in that prints its
// versions), not the runner's.
func TestProcessRecordsTheImagesVersions(t *testing.T) {
	needBwrap(t)
	dir := probeBundle(t) // skips without the go tool
	src := filepath.Join(t.TempDir(), "python3.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(`{\"framework.python\": \"3.99.0\", \"framework.torch\": \"9.9.9+image\"}`) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "python3")
	build := exec.Command("go", "build", "-o", bin, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in python3: %v\n%s", err, out)
	}
	python, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	archive := imageArchive(t, []string{"PATH=/opt/image/bin"}, []layerEntry{
		{name: "opt/image/bin/", typ: tar.TypeDir, mode: 0o755}, {name: "opt/image/bin/python3", body: string(python), mode: 0o755}})
	p, err := NewProcess(ProcessOptions{Fetch: fetchOf(withImage(t, dir, archive)), WorkDir: workDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(3)
	spec.Recipe = d5list.Recipe{Entrypoint: "code/probe", Image: "code/image.tar"}
	logs, err := p.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	env := logs[0].Clock.Environment
	if env["framework.python"] != "3.99.0" || env["framework.torch"] != "9.9.9+image" || env["env.PATH"] != "/opt/image/bin" {
		t.Errorf("an image job recorded %v, want the image's python3's versions and PATH", env)
	}
}

// The probe's output is untrusted (an image's python3): only its
// framework.* keys are kept, bounded; anything else records nothing.
func TestParseEnvironmentProbe(t *testing.T) {
	long := strings.Repeat("é", 300)
	got := parseEnvironmentProbe([]string{"a warning", `{"framework.torch": "1.13.1", "framework.cudnn": 8902, "other": "x", "framework.blas": "` + long + `", "framework.none": ""}`, ""})
	if got["framework.torch"] != "1.13.1" || got["framework.cudnn"] != "8902" {
		t.Errorf("parsed %v", got)
	}
	if _, ok := got["other"]; ok {
		t.Errorf("a key outside framework.* was kept: %v", got)
	}
	if b := got["framework.blas"]; len(b) > maxRecordedValue || !utf8.ValidString(b) || !strings.HasSuffix(b, "…") {
		t.Errorf("a long value was kept as %q (%d bytes)", b, len(b))
	}
	if _, ok := got["framework.none"]; ok {
		t.Errorf("an empty version was kept: %v", got)
	}
	if got := parseEnvironmentProbe([]string{`{"framework.cuda": 1e300}`}); len(got["framework.cuda"]) > maxRecordedValue {
		t.Errorf("a number of 301 digits was kept as %d bytes", len(got["framework.cuda"]))
	}
	if got := parseEnvironmentProbe([]string{"Traceback ...", "not json"}); got != nil {
		t.Errorf("output without JSON: %v, want nothing", got)
	}
	var many []string
	for i := range 200 {
		many = append(many, "K"+strconv.Itoa(i)+"=v")
	}
	if rec := envRecord(many); len(rec) > maxRecordedKeys {
		t.Errorf("%d variables recorded, want at most %d", len(rec), maxRecordedKeys)
	}
}

// The runner's own sandbox is probed once for many jobs: the probe starts
// Python and imports torch, a second every job would pay. A probe that
// found nothing is asked again.
func TestHostVersionsProbedOnce(t *testing.T) {
	var c VersionCache
	calls := 0
	probe := func(v map[string]string) func() map[string]string {
		return func() map[string]string { calls++; return v }
	}
	if got := c.get(probe(nil)); len(got) != 0 || calls != 1 {
		t.Fatalf("empty probe: %v after %d calls", got, calls)
	}
	want := map[string]string{"framework.torch": "1.13.0a0"}
	for range 3 {
		got := c.get(probe(want))
		if got["framework.torch"] != "1.13.0a0" {
			t.Fatalf("got %v", got)
		}
		got["framework.torch"] = "changed by a caller"
	}
	if calls != 2 {
		t.Errorf("probed %d times for 4 jobs (one found nothing), want 2", calls)
	}
	c.at = c.at.Add(-2 * hostVersionsTTL)
	c.get(probe(want))
	if calls != 3 {
		t.Errorf("a probe older than %s was not asked again", hostVersionsTTL)
	}
}
