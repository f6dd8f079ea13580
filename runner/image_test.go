package runner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	ocilayout "github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// layerEntry is one entry of a test layer.
type layerEntry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func layerTar(t *testing.T, entries []layerEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Size: int64(len(e.body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// imageArchive writes an image of the given layers, bottom first, with
// env in its config, as `docker save` would, and returns its path.
func imageArchive(t *testing.T, env []string, layers ...[]layerEntry) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image.tar")
	if err := tarball.WriteToFile(out, name.MustParseReference("d5list.test/competitor:1"), imageOf(t, env, layers...)); err != nil {
		t.Fatal(err)
	}
	return out
}

// imageOf is an image of the layers, with env in its config.
func imageOf(t *testing.T, env []string, layers ...[]layerEntry) v1.Image {
	t.Helper()
	img := empty.Image
	for _, entries := range layers {
		data := layerTar(t, entries)
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
	}
	img, err := mutate.Config(img, v1.Config{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// An image's layers unpack as the OCI layer format says: later layers
// over earlier ones, whiteouts removing files and emptying folders,
// relative links inside the image kept, the config's environment read.
func TestUnpackImage(t *testing.T) {
	archive := imageArchive(t, []string{"PATH=/opt/bin:/usr/bin", "LANG=C.UTF-8"},
		[]layerEntry{
			{name: "etc/", typ: tar.TypeDir, mode: 0o755},
			{name: "etc/marker", body: "from layer 0"},
			{name: "etc/old", body: "removed by layer 1"},
			{name: "opt/bin/tool", body: "#!/bin/true\n", mode: 0o4755},
			{name: "cache/a", body: "emptied"},
			{name: "cache/b", body: "emptied"},
		},
		[]layerEntry{
			{name: "./etc/marker", body: "from layer 1"},
			{name: "etc/.wh.old", typ: tar.TypeReg},
			{name: "cache/.wh..wh..opq", typ: tar.TypeReg},
			{name: "cache/c", body: "kept"},
			{name: "usr/bin/", typ: tar.TypeDir, mode: 0o755},
			{name: "usr/bin/tool", link: "../../opt/bin/tool", typ: tar.TypeSymlink},
			{name: "opt/bin/tool-again", link: "opt/bin/tool", typ: tar.TypeLink},
		})
	root := t.TempDir()
	cfg, err := unpackImage(context.Background(), archive, root, DefaultImageLimits())
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return string(b)
	}
	if got := read("etc/marker"); got != "from layer 1" {
		t.Errorf("etc/marker: %q, want layer 1's", got)
	}
	if _, err := os.Lstat(filepath.Join(root, "etc/old")); !os.IsNotExist(err) {
		t.Errorf("etc/old survived its whiteout: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "cache/a")); !os.IsNotExist(err) || read("cache/c") != "kept" {
		t.Errorf("the opaque whiteout: cache/a %v, cache/c %q", err, read("cache/c"))
	}
	if got := read("usr/bin/tool"); got != "#!/bin/true\n" || read("opt/bin/tool-again") != got {
		t.Errorf("links: %q and %q", got, read("opt/bin/tool-again"))
	}
	if fi, err := os.Stat(filepath.Join(root, "opt/bin/tool")); err != nil || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("opt/bin/tool: %v %v, want it without its setuid bit", fi, err)
	}
	for _, d := range []string{"proc", "dev", "tmp", "d5/bundle", "d5/run", "d5/data"} {
		if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
			t.Errorf("mount point /%s: %v", d, err)
		}
	}
	if strings.Join(cfg.Env, " ") != "PATH=/opt/bin:/usr/bin LANG=C.UTF-8" {
		t.Errorf("config env %v", cfg.Env)
	}
}

// A hostile layer is refused with its layer (index and digest) and path
// named, and nothing lands outside the image's root.
func TestUnpackImageRefusesHostileLayers(t *testing.T) {
	base := []layerEntry{{name: "etc/", typ: tar.TypeDir, mode: 0o755}, {name: "etc/passwd", body: "image"}}
	for _, tt := range []struct {
		name  string
		layer []layerEntry
		lim   ImageLimits
		want  string
	}{
		{"dot-dot path", []layerEntry{{name: "../outside", body: "x"}}, DefaultImageLimits(), `../outside: a path with ".."`},
		{"dot-dot inside", []layerEntry{{name: "etc/../../outside", body: "x"}}, DefaultImageLimits(), `etc/../../outside: a path with ".."`},
		{"escaping hard link", []layerEntry{{name: "etc/shadow", link: "../host/etc/shadow", typ: tar.TypeLink}}, DefaultImageLimits(), "etc/shadow: a hard link out of the image"},
		{"device", []layerEntry{{name: "dev/sda", typ: tar.TypeBlock}}, DefaultImageLimits(), "dev/sda: a device file"},
		{"FIFO", []layerEntry{{name: "tmp/pipe", typ: tar.TypeFifo}}, DefaultImageLimits(), "tmp/pipe: a FIFO"},
		{"whiteout outside", []layerEntry{{name: "../.wh.etc", typ: tar.TypeReg}}, DefaultImageLimits(), `../.wh.etc: a path with ".."`},
		{"too large", []layerEntry{{name: "big", body: strings.Repeat("0", 64<<10)}}, ImageLimits{Bytes: 32 << 10, Entries: 100}, "big: an entry of 65536 bytes: the image unpacks past its limit of 32768 bytes"},
		{"too many entries", []layerEntry{{name: "a"}, {name: "b"}, {name: "c"}}, ImageLimits{Bytes: 1 << 20, Entries: 4}, "more than 4 entries"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "rootfs")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := unpackImage(context.Background(), imageArchive(t, nil, base, tt.layer), root, tt.lim)
			if err == nil || !strings.Contains(err.Error(), "layer 1 (sha256:") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming layer 1 by its digest and saying %q", err, tt.want)
			}
			entries, _ := os.ReadDir(parent)
			if len(entries) != 1 {
				t.Errorf("the unpacking wrote beside the image's root: %v", entries)
			}
		})
	}
	// A link inside the image is followed only inside it: a later file
	// through a symlink that points out would be refused, so an earlier
	// legal link cannot be used to write outside.
	parent := t.TempDir()
	root := filepath.Join(parent, "rootfs")
	os.Mkdir(root, 0o755)
	_, err := unpackImage(context.Background(), imageArchive(t, nil,
		[]layerEntry{{name: "a", link: ".", typ: tar.TypeSymlink}},
		[]layerEntry{{name: "a/a/a/file", body: "inside"}}), root, DefaultImageLimits())
	if err != nil {
		t.Fatalf("a link to the image's own root: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "file")); string(b) != "inside" {
		t.Errorf("a/a/a/file landed elsewhere: %q", b)
	}
}

// Symbolic links are kept whatever they point to, absolute ones as real
// Debian and Ubuntu images have them (the sandbox resolves them in the
// image), but on the runner nothing is written, linked or removed through
// a link that leaves rootfs: an absolute link, or a relative one climbing
// out, is refused as a path of a later entry, with the layer and path
// named, and the host's files stay as they were.
func TestUnpackImageNeverFollowsLinksOutOfTheRoot(t *testing.T) {
	// A host folder an absolute link of the image names: what the layers
	// below try must leave it as it is.
	canary := t.TempDir()
	if err := os.WriteFile(filepath.Join(canary, "keep"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostPasswd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	debian := []layerEntry{
		{name: "etc/", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/bin/mawk", body: "#!/bin/true\n", mode: 0o755},
		{name: "etc/alternatives/awk", link: "/usr/bin/mawk", typ: tar.TypeSymlink},
		{name: "usr/bin/awk", link: "/etc/alternatives/awk", typ: tar.TypeSymlink},
		{name: "etc/localtime", link: "/usr/share/zoneinfo/Etc/UTC", typ: tar.TypeSymlink},
		{name: "var/run", link: "/run", typ: tar.TypeSymlink},
		{name: "bin", link: "usr/bin", typ: tar.TypeSymlink},
		{name: "up", link: "../../../../", typ: tar.TypeSymlink},
		{name: "host", link: canary, typ: tar.TypeSymlink},
		{name: "slash", link: "/", typ: tar.TypeSymlink},
		// A hard link to a link is a second link, not the file it names.
		{name: "etc/awk-again", link: "usr/bin/awk", typ: tar.TypeLink},
	}
	parent := t.TempDir()
	root := filepath.Join(parent, "rootfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := unpackImage(context.Background(), imageArchive(t, nil, debian), root, DefaultImageLimits()); err != nil {
		t.Fatalf("an image with Debian's absolute links: %v", err)
	}
	for name, want := range map[string]string{
		"usr/bin/awk": "/etc/alternatives/awk", "etc/localtime": "/usr/share/zoneinfo/Etc/UTC",
		"bin": "usr/bin", "up": "../../../../", "etc/awk-again": "/etc/alternatives/awk",
	} {
		if got, err := os.Readlink(filepath.Join(root, name)); err != nil || got != want {
			t.Errorf("%s: a link to %q (%v), want %q", name, got, err, want)
		}
	}

	for _, tt := range []struct {
		name  string
		layer []layerEntry
		want  string
	}{
		{"a file through /", []layerEntry{{name: "etc", link: "/", typ: tar.TypeSymlink}, {name: "etc/passwd", body: "root::0:0::/:/bin/sh\n"}}, "etc/passwd: the path goes through a symbolic link out of the image's root"},
		{"a file through ../../../../", []layerEntry{{name: "x/evil", body: "evil"}}, "x/evil: the path goes through a symbolic link out of the image's root"},
		{"a file through an absolute link", []layerEntry{{name: "host/evil", body: "evil"}}, "host/evil: the path goes through"},
		{"a folder through an absolute link", []layerEntry{{name: "host/evil/", typ: tar.TypeDir, mode: 0o755}}, "host/evil/: the path goes through"},
		{"a link through an absolute link", []layerEntry{{name: "host/evil", link: "/etc/shadow", typ: tar.TypeSymlink}}, "host/evil: the path goes through"},
		{"a hard link to a host file", []layerEntry{{name: "shadow", link: "slash/etc/passwd", typ: tar.TypeLink}}, "shadow: the path goes through"},
		{"a hard link into the host", []layerEntry{{name: "host/passwd", link: "etc/alternatives/awk", typ: tar.TypeLink}}, "host/passwd: the path goes through"},
		{"a whiteout through an absolute link", []layerEntry{{name: "host/.wh.keep", typ: tar.TypeReg}}, "host/.wh.keep: the path goes through"},
		{"an opaque whiteout through an absolute link", []layerEntry{{name: "host/.wh..wh..opq", typ: tar.TypeReg}}, "host/.wh..wh..opq: "},
		{"a whiteout through ../../../../", []layerEntry{{name: "up/.wh.tmp", typ: tar.TypeReg}}, "up/.wh.tmp: the path goes through"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "rootfs")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			layer := tt.layer
			if tt.name == "a file through ../../../../" {
				layer = append([]layerEntry{{name: "x", link: "../../../../", typ: tar.TypeSymlink}}, layer...)
			}
			_, err := unpackImage(context.Background(), imageArchive(t, nil, debian, layer), root, DefaultImageLimits())
			if err == nil || !strings.Contains(err.Error(), "layer 1 (sha256:") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming layer 1 by its digest and saying %q", err, tt.want)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("the unpacking wrote beside the image's root: %v", entries)
			}
			if entries, _ := os.ReadDir(canary); len(entries) != 1 {
				t.Errorf("the host folder an absolute link names changed: %v", entries)
			}
			if b, _ := os.ReadFile(filepath.Join(canary, "keep")); string(b) != "host" {
				t.Errorf("the host file an absolute link names: %q", b)
			}
			if b, _ := os.ReadFile("/etc/passwd"); !bytes.Equal(b, hostPasswd) {
				t.Fatalf("the host's /etc/passwd changed")
			}
			for _, p := range []string{"/evil", filepath.Join(filepath.Dir(parent), "evil"), filepath.Join(parent, "evil")} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was written", p)
				}
			}
		})
	}
}

// A layer's whiteouts remove what the layers below it left, never what
// the same layer writes, before or after them in its tar (OCI image-spec:
// whiteouts apply to lower layers only).
func TestUnpackImageWhiteoutsApplyToLowerLayersOnly(t *testing.T) {
	archive := imageArchive(t, nil,
		[]layerEntry{
			{name: "cache/a", body: "lower"},
			{name: "cache/sub/b", body: "lower"},
			{name: "etc/old", body: "lower"},
			{name: "d/x", body: "lower"},
		},
		[]layerEntry{
			// Written before the opaque whiteout of its folder: kept.
			{name: "cache/new", body: "upper"},
			{name: "cache/sub/c", body: "upper"},
			{name: "cache/.wh..wh..opq", typ: tar.TypeReg},
			{name: "cache/newer", body: "upper"},
			// Replaced, then whited out, in one layer: this layer's file
			// stays, the lower one is gone either way.
			{name: "etc/old", body: "upper"},
			{name: "etc/.wh.old", typ: tar.TypeReg},
			// A folder whose lower file goes and whose upper file stays.
			{name: "d/y", body: "upper"},
			{name: ".wh.d", typ: tar.TypeReg},
		})
	root := t.TempDir()
	if _, err := unpackImage(context.Background(), archive, root, DefaultImageLimits()); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"cache/a": "", "cache/sub/b": "", "d/x": "",
		"cache/new": "upper", "cache/sub/c": "upper", "cache/newer": "upper", "etc/old": "upper", "d/y": "upper",
	} {
		b, err := os.ReadFile(filepath.Join(root, p))
		switch {
		case want == "" && !os.IsNotExist(err):
			t.Errorf("%s: %q %v, want it removed by the whiteout", p, b, err)
		case want != "" && string(b) != want:
			t.Errorf("%s: %q %v, want %q", p, b, err, want)
		}
	}
}

// bombArchive writes a `docker save` archive of one gzip-compressed layer
// that decompresses to count copies of unit (a tar stream's bytes), and
// returns its path. The layer is count gzip members of unit, compressed
// once (gzip readers read concatenated members as one stream), so
// gigabytes of zeros cost a few megabytes on disk and nothing in memory;
// its diff ID is made up, since computing it would mean decompressing it.
func bombArchive(t *testing.T, head, unit []byte, count int) string {
	t.Helper()
	member := func(b []byte) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "layer.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	f.Write(member(head))
	one := member(unit)
	for range count {
		if _, err := f.Write(one); err != nil {
			t.Fatal(err)
		}
	}
	// The end of the tar stream: two zero blocks.
	f.Write(member(make([]byte, 1024)))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + strings.Repeat("b", 64)}},
	})
	manifest, _ := json.Marshal([]map[string]any{{"Config": "config.json", "RepoTags": []string{"d5list.test/bomb:1"}, "Layers": []string{"layer.tar.gz"}}})
	return tarOf(t, dir, map[string][]byte{"config.json": config, "manifest.json": manifest}, "layer.tar.gz")
}

// tarOf writes a tar of the named files, small ones given and large ones
// copied from dir, and returns its path.
func tarOf(t *testing.T, dir string, small map[string][]byte, large ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for name, data := range small {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write(data)
	}
	for _, name := range large {
		src, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := src.Stat()
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: fi.Size(), Typeflag: tar.TypeReg})
		if _, err := io.Copy(tw, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tarHeader is the tar header block(s) of one entry.
func tarHeader(t *testing.T, h *tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tar.NewWriter(&buf).WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A decompression bomb is refused as soon as what its layers decompress
// to passes the limit, whatever the type of the entries that carry it
// (one the unpacker ignores is read all the same), with the layer named,
// and a cancelled unpacking stops: none of them decompresses the 4 GiB
// it holds.
func TestUnpackImageRefusesDecompressionBombs(t *testing.T) {
	const mib = 1 << 20
	zeros := make([]byte, mib)
	// One entry of a type the unpacker does not write ('Z'), of 4 GiB of
	// zeros: refused at its header, whatever the limits.
	one := bombArchive(t, tarHeader(t, &tar.Header{Name: "junk", Typeflag: 'Z', Size: 4 << 30, Mode: 0o644}), zeros, 4096)
	// 4096 entries of 1 MiB each: each is under any limit, together they
	// pass it, and the count of what is read stops them.
	unit := append(tarHeader(t, &tar.Header{Name: "junk", Typeflag: 'Z', Size: mib, Mode: 0o644}), zeros...)
	many := bombArchive(t, nil, unit, 4096)
	fi, err := os.Stat(many)
	if err != nil {
		t.Fatal(err)
	}
	small := ImageLimits{Floor: 16 * mib}
	for _, tt := range []struct {
		name    string
		archive string
		lim     ImageLimits
		cancel  bool
		want    string
	}{
		{"one entry, default limits", one, DefaultImageLimits(), false, "junk: an entry of 4294967296 bytes: the image unpacks past its limit of 1073741824 bytes"},
		{"many entries, by the ratio", many, small, false, fmt.Sprintf("the image unpacks past its limit of %d bytes", int64(20*float64(fi.Size())))},
		{"many entries, by the ceiling", many, ImageLimits{Floor: 16 * mib, Bytes: 32 * mib}, false, "the image unpacks past its limit of 33554432 bytes"},
		{"cancelled", many, DefaultImageLimits(), true, "context canceled"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "rootfs")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			start := time.Now()
			_, err := unpackImage(ctx, tt.archive, root, tt.lim)
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if tt.cancel {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("error %v, want the context's", err)
				}
			} else if !strings.Contains(err.Error(), "layer 0 (sha256:"+strings.Repeat("b", 64)+")") {
				t.Errorf("error %v, want the layer named by its diff ID", err)
			}
			if took > 10*time.Second {
				t.Errorf("refusing took %v: the bomb was decompressed", took)
			}
			t.Logf("%v in %v", err, took)
		})
	}
}

// ociArchive writes the OCI image layout of idx as a tar, as `podman save
// --format oci-archive` does (entries under "./", folders included), with
// extra entries after it, and returns its path.
func ociArchive(t *testing.T, idx v1.ImageIndex, extra ...*tar.Header) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := ocilayout.Write(dir, idx); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.oci.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Name: "./" + rel + "/", Typeflag: tar.TypeDir, Mode: 0o755})
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: "./" + rel, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range extra {
		tw.WriteHeader(h)
		if h.Size > 0 {
			tw.Write(make([]byte, h.Size))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// An OCI image layout archive (podman's oci-archive, skopeo's) unpacks as
// a `docker save` one does: its one image, or, of a multi-platform index,
// the image for the runner's platform. Only the layout's own files are
// taken from the archive, and its layers get the same checks.
func TestUnpackImageFromOCILayout(t *testing.T) {
	marker := func(s string) v1.Image {
		return imageOf(t, []string{"PATH=/opt/bin", "IMAGE=" + s},
			[]layerEntry{{name: "etc/", typ: tar.TypeDir, mode: 0o755}, {name: "etc/marker", body: s}})
	}
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	multi := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: marker("other"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: other}}},
		mutate.IndexAddendum{Add: marker("here"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}},
	)
	for _, tt := range []struct {
		name string
		idx  v1.ImageIndex
		want string
	}{
		{"one image", mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: marker("single")}), "single"},
		{"one image per platform", multi, "here"},
		{"a nested index", mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: multi}), "here"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "rootfs")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			archive := ociArchive(t, tt.idx,
				&tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
				&tar.Header{Name: "blobs/sha256/../../../evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
				&tar.Header{Name: "blobs/sha256/" + strings.Repeat("0", 64), Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
			cfg, err := unpackImage(context.Background(), archive, root, DefaultImageLimits())
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(root, "etc/marker")); err != nil || string(b) != tt.want {
				t.Errorf("etc/marker: %q %v, want %q", b, err, tt.want)
			}
			if strings.Join(cfg.Env, " ") != "PATH=/opt/bin IMAGE="+tt.want {
				t.Errorf("config env %v", cfg.Env)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("beside the image's root after unpacking: %v, want nothing (the layout's copy removed)", entries)
			}
			for _, p := range []string{filepath.Join(filepath.Dir(parent), "evil"), filepath.Join(parent, "evil")} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was written", p)
				}
			}
		})
	}

	// A layout's layers are checked as any others.
	root := filepath.Join(t.TempDir(), "rootfs")
	os.Mkdir(root, 0o755)
	bad := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: imageOf(t, nil, []layerEntry{{name: "../outside", body: "x"}})})
	if _, err := unpackImage(context.Background(), ociArchive(t, bad), root, DefaultImageLimits()); err == nil ||
		!strings.Contains(err.Error(), `layer 0 (sha256:`) || !strings.Contains(err.Error(), `../outside: a path with ".."`) {
		t.Errorf("a hostile layer in a layout: %v, want it refused with the layer named", err)
	}
	// Two images for no platform of the runner's: which one is meant is
	// not guessed.
	two := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: marker("a")}, mutate.IndexAddendum{Add: marker("b")})
	if _, err := unpackImage(context.Background(), ociArchive(t, two), root, DefaultImageLimits()); err == nil || !strings.Contains(err.Error(), "names 2 images") {
		t.Errorf("two images: %v, want them refused", err)
	}
	// Neither format.
	if _, err := unpackImage(context.Background(), tarOf(t, "", map[string][]byte{"hello": []byte("x")}), root, DefaultImageLimits()); err == nil ||
		!strings.Contains(err.Error(), "neither a `docker save` archive") {
		t.Errorf("a tar of neither format: %v", err)
	}
}
