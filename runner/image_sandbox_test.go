package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// probeSource is the entrypoint of the image test: a static program that
// reports what its file system is.
const probeSource = `package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	// Started as /usr/bin/probe-link, through the image's links.
	if filepath.Base(os.Args[0]) == "probe-link" {
		fmt.Print("ran through the links")
		return
	}
	marker, err := os.ReadFile("/etc/marker")
	if err != nil {
		marker = []byte("no marker: " + err.Error())
	}
	_, hostPython := os.Stat("/usr/bin/python3")
	linked := "no /usr/bin/probe-link"
	if _, err := os.Lstat("/usr/bin/probe-link"); err == nil {
		out, err := exec.Command("/usr/bin/probe-link").Output()
		linked = string(out)
		if err != nil {
			linked = "failed: " + err.Error()
		}
	}
	// What /tmp is: its file system type, and whether it takes a file.
	tmpType := "not mounted"
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		for i, x := range f {
			if x == "-" && len(f) > 4 && f[4] == "/tmp" && i+1 < len(f) {
				tmpType = f[i+1]
			}
		}
	}
	tmpWrite := "ok"
	if err := os.WriteFile("/tmp/probe-was-here", []byte("tmp"), 0o644); err != nil {
		tmpWrite = err.Error()
	}
	pci, _ := os.ReadDir("/sys/bus/pci/devices")
	var gate struct{ Seed int64 }
	if b, err := os.ReadFile(os.Getenv("D5_GATE")); err == nil {
		json.Unmarshal(b, &gate)
	}
	out := fmt.Sprintf("marker=%s\nhost-python-absent=%v\npath=%s\nseed=%d\nlinked=%s\ntmp-type=%s\ntmp-write=%s\nld-preload=%s\nsys-pci-devices=%d\n",
		marker, os.IsNotExist(hostPython), os.Getenv("PATH"), gate.Seed, linked, tmpType, tmpWrite, os.Getenv("LD_PRELOAD"), len(pci))
	if err := os.WriteFile(os.Getenv("D5_RESULT_LOG"), []byte(out), 0o644); err != nil {
		os.Exit(1)
	}
}
`

// probeBundle is the process-bundle fixture with the static probe built
// into it as code/probe.
func probeBundle(t *testing.T) string {
	t.Helper()
	probe := staticProgram(t, probeSource) // skips without the go tool
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS("testdata/process-bundle")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "code", "probe"), probe, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A recipe's container image is the sandbox's /: the entrypoint sees the
// image's files and environment, not the runner's /usr, and its runs go
// as the others do (issue 14). The image is built here, a one-layer image
// of a file and a folder; the entrypoint is a static binary of the bundle.
func TestProcessRunsInTheRecipesImage(t *testing.T) {
	needBwrap(t)
	dir := probeBundle(t)
	archive := imageArchive(t, []string{"PATH=/opt/image/bin"},
		[]layerEntry{{name: "etc/", typ: tar.TypeDir, mode: 0o755}, {name: "etc/marker", body: "from the image"}})
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "code", "image.tar"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var packed bytes.Buffer
	if err := bundle.Pack(dir, &packed); err != nil {
		t.Fatal(err)
	}
	p, err := NewProcess(ProcessOptions{
		Fetch:   fetchOf(packed.Bytes()),
		WorkDir: workDir(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(4, 5)
	spec.Recipe = d5list.Recipe{Entrypoint: "code/probe", Image: "code/image.tar"}
	logs, err := p.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range logs {
		got := string(l.Log)
		for _, want := range []string{"marker=from the image", "host-python-absent=true", "path=/opt/image/bin", "seed=" + []string{"4", "5"}[i]} {
			if !strings.Contains(got, want) {
				t.Errorf("run %d reported %q, want %q", i, got, want)
			}
		}
	}

	// An image with a hostile layer fails the job with the layer named.
	bad := imageArchive(t, nil, []layerEntry{{name: "etc", link: "/", typ: tar.TypeSymlink}, {name: "etc/passwd", body: "x"}})
	data, _ = os.ReadFile(bad)
	os.WriteFile(filepath.Join(dir, "code", "image.tar"), data, 0o644)
	packed.Reset()
	if err := bundle.Pack(dir, &packed); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Execute(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "layer 0 (sha256:") ||
		!strings.Contains(err.Error(), "etc/passwd: the path goes through a symbolic link out of the image's root") {
		t.Fatalf("a hostile image: %v, want the layer and path named", err)
	}
}

// withImage packs dir with the image archive at archive as
// code/image.tar.
func withImage(t *testing.T, dir, archive string) []byte {
	t.Helper()
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "code", "image.tar"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var packed bytes.Buffer
	if err := bundle.Pack(dir, &packed); err != nil {
		t.Fatal(err)
	}
	return packed.Bytes()
}

// An image laid out as Debian's are, with absolute links
// (/usr/bin/awk -> /etc/alternatives/awk -> /usr/bin/mawk), unpacks, and
// a program started through such links in the sandbox runs: the links
// resolve in the image, which is the sandbox's /.
func TestProcessRunsThroughTheImagesAbsoluteLinks(t *testing.T) {
	needBwrap(t)
	dir := probeBundle(t)
	probe, err := os.ReadFile(filepath.Join(dir, "code", "probe"))
	if err != nil {
		t.Fatal(err)
	}
	archive := imageArchive(t, nil, []layerEntry{
		{name: "usr/", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/bin/", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/lib/probe/probe", body: string(probe), mode: 0o755},
		{name: "bin", link: "usr/bin", typ: tar.TypeSymlink},
		{name: "etc/alternatives/probe-link", link: "/usr/lib/probe/probe", typ: tar.TypeSymlink},
		{name: "usr/bin/probe-link", link: "/etc/alternatives/probe-link", typ: tar.TypeSymlink},
		{name: "etc/localtime", link: "/usr/share/zoneinfo/Etc/UTC", typ: tar.TypeSymlink},
		{name: "var/run", link: "/run", typ: tar.TypeSymlink},
	})
	p, err := NewProcess(ProcessOptions{Fetch: fetchOf(withImage(t, dir, archive)), WorkDir: workDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(1)
	spec.Recipe = d5list.Recipe{Entrypoint: "code/probe", Image: "code/image.tar"}
	logs, err := p.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(logs[0].Log); !strings.Contains(got, "linked=ran through the links\n") {
		t.Fatalf("the run reported %q, want the program run through the image's absolute links", got)
	}
}

// The image's environment and the run's reach the sandbox only: prlimit
// and bwrap, which run on the host, get the runner's minimal environment,
// so an image's LD_PRELOAD neither loads into them nor breaks them. A
// bwrap wrapper records what environment it was started with.
func TestProcessImageEnvStaysInTheSandbox(t *testing.T) {
	needBwrap(t)
	realBwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	dir := probeBundle(t)
	archive := imageArchive(t, []string{"PATH=/opt/image/bin", "LD_PRELOAD=/nonexistent/libevil.so", "IMAGE_ONLY=yes"},
		[]layerEntry{{name: "etc/marker", body: "from the image"}})
	dump := workDir(t)
	if err := os.Chmod(dump, 0o777); err != nil { // the sandbox user writes it
		t.Fatal(err)
	}
	// NewProcess asks the wrapper for bwrap's --help as the runner's user.
	if err := os.WriteFile(filepath.Join(dump, "env"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dump, "env"), 0o666); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(workDir(t), "bwrap")
	// export -p is the shell's own: it needs no PATH.
	script := "#!/bin/sh\nexport -p > " + filepath.Join(dump, "env") + "\nexec " + realBwrap + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	p, err := NewProcess(ProcessOptions{
		Fetch: fetchOf(withImage(t, dir, archive)), WorkDir: workDir(t), Bwrap: wrapper,
		OnLine: func(run int, stream, line string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, line)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(7)
	spec.Recipe = d5list.Recipe{Entrypoint: "code/probe", Image: "code/image.tar"}
	logs, err := p.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(logs[0].Log); !strings.Contains(got, "ld-preload=/nonexistent/libevil.so\n") || !strings.Contains(got, "seed=7\n") {
		t.Errorf("the run reported %q, want the image's LD_PRELOAD and the run's seed inside the sandbox", got)
	}
	hostEnv, err := os.ReadFile(filepath.Join(dump, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hostEnv), "PATH=") {
		t.Errorf("bwrap's environment on the host, as its wrapper saw it: %q, want a PATH", hostEnv)
	}
	for _, leak := range []string{"LD_PRELOAD", "IMAGE_ONLY", "D5_", "/opt/image/bin"} {
		if strings.Contains(string(hostEnv), leak) {
			t.Errorf("bwrap on the host was started with %s in its environment:\n%s", leak, hostEnv)
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "LD_PRELOAD") {
			t.Errorf("a host program saw the image's LD_PRELOAD: %s", l)
		}
	}
}

// A run's /tmp in an image is one of its work areas: a tmpfs of the job's
// disk size, which the kernel charges to the job's memory, and nothing of
// which lands on the runner's disk.
func TestProcessImageTmpIsAWorkArea(t *testing.T) {
	needBwrap(t)
	dir := probeBundle(t)
	archive := imageArchive(t, nil, []layerEntry{{name: "etc/marker", body: "from the image"}})
	work := workDir(t)
	p, err := NewProcess(ProcessOptions{Fetch: fetchOf(withImage(t, dir, archive)), WorkDir: work, KeepWork: true})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(1)
	spec.Recipe = d5list.Recipe{Entrypoint: "code/probe", Image: "code/image.tar"}
	logs, err := p.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(logs[0].Log); !strings.Contains(got, "tmp-write=ok\n") || !strings.Contains(got, "tmp-type=tmpfs\n") {
		t.Fatalf("the run reported %q, want /tmp a writable tmpfs", got)
	}
	var written []string
	filepath.WalkDir(work, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "probe-was-here" {
			written = append(written, path)
		}
		return nil
	})
	if len(written) != 0 {
		t.Fatalf("the run's /tmp/probe-was-here is on the runner's disk: %v", written)
	}
}

// An image job starts where the sandbox binds GPU entries of /sys, which
// bwrap cannot make in the read-only image (before, "bwrap: Can't mkdir
// parents for /sys/bus/pci: Read-only file system", or the binds left
// out): their mount points are made in the runner's unpacked copy, in
// place of whatever the image has there, links included. The GPU is
// /dev/null here, so that the binds are made on a machine without one.
func TestImageSandboxMountsGPUPathsOnItsReadOnlyRoot(t *testing.T) {
	needBwrap(t)
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Skip("this machine has no /sys/bus/pci to bind")
	}
	dir := probeBundle(t)
	probe, err := os.ReadFile(filepath.Join(dir, "code", "probe"))
	if err != nil {
		t.Fatal(err)
	}
	archive := imageArchive(t, nil, []layerEntry{
		{name: "usr/lib/probe/probe", body: string(probe), mode: 0o755},
		{name: "etc/marker", body: "from the image"},
		// Mount points the image has as links out of it, or as a file.
		{name: "sys", link: "/", typ: tar.TypeSymlink},
		{name: "tmp", link: "/etc", typ: tar.TypeSymlink},
		{name: "d5", body: "not a folder"},
	})
	job := workDir(t)
	rootfs := filepath.Join(job, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := unpackImage(context.Background(), archive, rootfs, DefaultImageLimits()); err != nil {
		t.Fatal(err)
	}
	host, err := hostLayout(job, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{host.bundle, host.lib} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	host.devices = []string{"/dev/null"}
	win, err := openWindow(host.ctl, windowRun{seed: 1, maxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProcess(ProcessOptions{Fetch: fetchOf(nil), WorkDir: job})
	if err != nil {
		t.Fatal(err)
	}
	in := sandboxLayout
	args := p.bwrapImageArgs(rootfs, host, in, []string{"D5_RESULT_LOG=" + in.result, "D5_GATE=" + in.gate}, testSpec(1))
	if !strings.Contains(strings.Join(args, " "), "--ro-bind-try /sys/bus/pci /sys/bus/pci") {
		t.Fatalf("the sandbox's arguments leave /sys/bus/pci out: %q", args)
	}
	argv, opts, err := p.sandboxCommand(args, []string{"/usr/lib/probe/probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer opts.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{opts}
	cmd.Env = hostEnv
	out, err := cmd.CombinedOutput()
	b, logErr := win.close(&d5list.RunClock{})
	if err != nil {
		t.Fatalf("the sandbox did not start: %v\n%s", err, out)
	}
	if logErr != nil {
		t.Fatal(logErr)
	}
	got := string(b)
	if !strings.Contains(got, "marker=from the image") || !strings.Contains(got, "tmp-write=ok") || strings.Contains(got, "sys-pci-devices=0\n") {
		t.Errorf("the run reported %q, want the image, a writable /tmp and the host's PCI devices", got)
	}
}

// A job with a recipe image goes only to a runner that can run it: a
// process runner with bubblewrap advertises images=yes, and a Slurm
// runner or a process runner without bubblewrap, which would lease the
// job only to refuse it, does not, so the portal's label matching keeps
// the job from them.
func TestOnlyASandboxedProcessRunnerTakesImageJobs(t *testing.T) {
	needBwrap(t)
	noFetch := func(context.Context, d5list.JobSpec, io.Writer) error { return nil }
	sandboxed, err := NewProcess(ProcessOptions{Fetch: noFetch})
	if err != nil {
		t.Fatal(err)
	}
	unsandboxed, err := NewProcess(ProcessOptions{Fetch: noFetch, AllowUnsandboxed: true, Bwrap: "/nonexistent/bwrap"})
	if err != nil {
		t.Fatal(err)
	}
	bench := d5list.Benchmark{ID: "l2-image"} // no workload: runs=entrypoint
	for _, tt := range []struct {
		name     string
		executor Executor
		takes    bool
	}{
		{"process runner with bubblewrap", sandboxed, true},
		{"process runner without bubblewrap", unsandboxed, false},
		{"Slurm runner", &Slurm{}, false},
		{"builtin runner", Builtin{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := &labelQueue{seen: make(chan map[string]string, 1)}
			ctx, cancel := context.WithCancel(context.Background())
			a := &Agent{ID: "a", Labels: map[string]string{"registry.images.site": "yes"}, Queue: q, Executor: tt.executor, Poll: time.Millisecond}
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			labels := <-q.seen
			cancel()
			<-done
			for _, image := range []string{"code/image.tar", "images.site/team/trainer@sha256:" + strings.Repeat("ab", 32)} {
				needs := (&d5list.Recipe{Entrypoint: "code/run.sh", Image: image}).RunnerNeeds()
				if got := bench.RunnableBy(labels) && d5list.HasLabels(labels, needs); got != tt.takes {
					t.Errorf("labels %v, a job with image %s needing %v: taken %v, want %v", labels, image, needs, got, tt.takes)
				}
			}
			// A job without an image is as before.
			if needs := (&d5list.Recipe{Entrypoint: "code/run.sh"}).RunnerNeeds(); len(needs) != 0 {
				t.Errorf("a recipe without an image needs %v", needs)
			}
		})
	}
}

// Pulling and unpacking a recipe's image is the job's preparation, not
// its first run's: it is done once, before any run starts, and run 0's
// wall time (the run's time when its log arrives all at once) does not
// count it. The unpack here is slow by construction.
func TestImageUnpackIsOffTheRunsClock(t *testing.T) {
	needBwrap(t)
	dir := probeBundle(t)
	archive := imageArchive(t, nil, []layerEntry{{name: "etc/marker", body: "from the image"}})
	const slow = 2 * time.Second
	var mu sync.Mutex
	unpacks, startedBeforeUnpack := 0, false
	p, err := NewProcess(ProcessOptions{
		Fetch: fetchOf(withImage(t, dir, archive)), WorkDir: workDir(t),
		OnStart: func(run, pid int) {
			mu.Lock()
			defer mu.Unlock()
			startedBeforeUnpack = startedBeforeUnpack || unpacks == 0
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.unpack = func(ctx context.Context, archive, rootfs string, lim ImageLimits) (imageConfig, error) {
		time.Sleep(slow)
		mu.Lock()
		unpacks++
		mu.Unlock()
		return unpackImage(ctx, archive, rootfs, lim)
	}
	spec := testSpec(1, 2)
	spec.Recipe = d5list.Recipe{Entrypoint: "code/probe", Image: "code/image.tar"}
	logs, err := p.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if unpacks != 1 || startedBeforeUnpack {
		t.Errorf("the image was unpacked %d times, a run started before it: %v; want once, before the runs", unpacks, startedBeforeUnpack)
	}
	for _, l := range logs {
		if got := time.Duration(l.Clock.WallS * float64(time.Second)); got >= slow {
			t.Errorf("run %d's wall time %v counts the image's %v unpack", l.Index, got, slow)
		}
		if !strings.Contains(string(l.Log), "marker=from the image") {
			t.Errorf("run %d did not run in the image: %q", l.Index, l.Log)
		}
	}
}
