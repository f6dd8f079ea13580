package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// A recipe may name its image in a registry, pinned by digest (issue 14):
// a runner whose operator allows that registry pulls it once, keeps it
// under its digest, and runs the entrypoint in it as in an archive from the
// bundle. The registry is go-containerregistry's own, served on
// 127.0.0.1 (no other is reachable here).
func TestProcessPullsTheRecipesRegistryImage(t *testing.T) {
	needBwrap(t)
	dir := probeBundle(t)
	var packed bytes.Buffer
	if err := bundle.Pack(dir, &packed); err != nil {
		t.Fatal(err)
	}
	fetch := fetchOf(packed.Bytes())
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img := imageOf(t, []string{"PATH=/opt/image/bin"},
		[]layerEntry{{name: "etc/", typ: tar.TypeDir, mode: 0o755}, {name: "etc/marker", body: "from the registry"}})
	tag, err := name.NewTag(host + "/team/trainer:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	image := host + "/team/trainer@" + digest.String()
	if got := RegistryLabels([]string{host, "*"}); len(got) != 1 || got[d5list.LabelRegistryPrefix+host] != "yes" {
		t.Fatalf("RegistryLabels: %v, want %s=yes alone", got, d5list.LabelRegistryPrefix+host)
	}
	if needs := (&d5list.Recipe{Image: image}).RunnerNeeds(); needs[d5list.LabelRegistryPrefix+host] != "yes" {
		t.Fatalf("the recipe needs %v, want the registry's label", needs)
	}
	spec := testSpec(4)
	spec.Recipe = d5list.Recipe{Entrypoint: "code/probe", Image: image}

	// A runner whose operator did not allow the registry says so.
	closed, err := NewProcess(ProcessOptions{Fetch: fetch, WorkDir: workDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := closed.Execute(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "does not pull from "+host) ||
		!strings.Contains(err.Error(), "--registry "+host) {
		t.Fatalf("a registry the runner does not pull from: %v, want it named with the flag that allows it", err)
	}

	cache := t.TempDir()
	p, err := NewProcess(ProcessOptions{Fetch: fetch, WorkDir: workDir(t), Registries: []string{host}, ImageCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(logs[0].Log); !strings.Contains(got, "marker=from the registry") || !strings.Contains(got, "path=/opt/image/bin") {
		t.Fatalf("the run reported %q, want the registry image's file and PATH", got)
	}
	cached, err := filepath.Glob(filepath.Join(cache, "*"))
	if err != nil || len(cached) != 1 || filepath.Base(cached[0]) != strings.ReplaceAll(digest.String(), ":", "-")+".tar" {
		t.Fatalf("the cache holds %v, want one archive named by the digest", cached)
	}

	// An image the registry does not have is a failed pull, named.
	missing := spec
	missing.Recipe.Image = host + "/team/trainer@sha256:" + strings.Repeat("0", 64)
	if _, err := p.Execute(context.Background(), missing); err == nil || !strings.Contains(err.Error(), "pulling "+missing.Recipe.Image) {
		t.Fatalf("a digest the registry does not have: %v, want the pull named", err)
	}

	// The next job of the same image needs no registry.
	srv.Close()
	if logs, err = p.Execute(context.Background(), spec); err != nil || !strings.Contains(string(logs[0].Log), "marker=from the registry") {
		t.Fatalf("from the cache with the registry gone: %v", err)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 1 {
		t.Fatalf("the cache holds %d entries after a failed pull, want only the image (no partial archive)", len(entries))
	}
}
