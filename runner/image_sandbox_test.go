package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// probeSource is the entrypoint of the image test: a static program that
// reports what its file system is.
const probeSource = `package main

import (
	"fmt"
	"os"
)

func main() {
	marker, err := os.ReadFile("/etc/marker")
	if err != nil {
		marker = []byte("no marker: " + err.Error())
	}
	_, hostPython := os.Stat("/usr/bin/python3")
	out := fmt.Sprintf("marker=%s\nhost-python-absent=%v\npath=%s\nseed=%s\n", marker, os.IsNotExist(hostPython), os.Getenv("PATH"), os.Getenv("D5_SEED"))
	if err := os.WriteFile(os.Getenv("D5_RESULT_LOG"), []byte(out), 0o644); err != nil {
		os.Exit(1)
	}
}
`

// probeBundle is the process-bundle fixture with the static probe built
// into it as code/probe.
func probeBundle(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: the static probe cannot be built")
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS("testdata/process-bundle")); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "probe.go")
	if err := os.WriteFile(src, []byte(probeSource), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(goTool, "build", "-o", filepath.Join(dir, "code", "probe"), src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, out)
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
	bad := imageArchive(t, nil, []layerEntry{{name: "etc/host", link: "/etc", typ: tar.TypeSymlink}})
	data, _ = os.ReadFile(bad)
	os.WriteFile(filepath.Join(dir, "code", "image.tar"), data, 0o644)
	packed.Reset()
	if err := bundle.Pack(dir, &packed); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Execute(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "layer 0: etc/host: an absolute symbolic link") {
		t.Fatalf("a hostile image: %v, want the layer and path named", err)
	}
}
