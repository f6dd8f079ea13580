package runner

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	ocilayout "github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// ImageLimits bound what a competitor's container image may unpack to:
// its layers are untrusted input, and a few kilobytes of gzip can claim
// terabytes. What counts is every byte of the decompressed layer streams
// (tar headers, file data, and the data of entries that are skipped, of
// any type), as they are read: an image is refused once they pass
//
//	min(Bytes, max(Floor, Ratio × the archive's size))
//
// so that an image no larger unpacked than a bundle may be (Floor) always
// unpacks, a larger one only as far as real software compresses (gzip and
// zstd of binaries and libraries stay under 5×; zeros reach 1000×), and
// none past Bytes.
type ImageLimits struct {
	Bytes   int64   // unpacked bytes over all layers, whatever the archive's size
	Ratio   float64 // unpacked bytes over the archive's size, beyond Floor
	Floor   int64   // unpacked bytes any archive may reach, whatever its ratio
	Entries int     // entries over all layers
}

// DefaultImageLimits allow an image of a framework and its libraries: its
// archive in a bundle is at most the bundle's largest file (256 MiB), so
// up to 5 GiB unpacked at 20×, and a pulled one up to 8 GiB. Floor is the
// bundle's own limit on its unpacked files (1 GiB).
func DefaultImageLimits() ImageLimits {
	return ImageLimits{Bytes: 8 << 30, Ratio: 20, Floor: bundle.DefaultLimits().MaxTotalBytes, Entries: 500_000}
}

// withDefaults fills the zero limits from DefaultImageLimits, so that a
// zero never means "unbounded".
func (l ImageLimits) withDefaults() ImageLimits {
	d := DefaultImageLimits()
	if l.Bytes <= 0 {
		l.Bytes = d.Bytes
	}
	if l.Ratio <= 0 {
		l.Ratio = d.Ratio
	}
	if l.Floor <= 0 {
		l.Floor = d.Floor
	}
	if l.Entries <= 0 {
		l.Entries = d.Entries
	}
	return l
}

// unpacked is how many bytes an archive of size bytes may unpack to.
func (l ImageLimits) unpacked(size int64) int64 {
	n := l.Floor
	if r := l.Ratio * float64(size); r > float64(n) {
		n = int64(min(r, float64(l.Bytes)))
	}
	return min(n, l.Bytes)
}

// imageConfig is what a run takes from the image's config: its
// environment (PATH, library paths).
type imageConfig struct {
	Env []string
}

// unpackImage unpacks the image archive at archive (see openImage) layer
// by layer into rootfs, which must exist and be empty, as the root file
// system of a sandboxed run. Every entry is checked before anything of it
// is written, and every write goes through an os.Root, so nothing lands
// outside rootfs: a path with "..", a path through a symbolic link that
// leaves rootfs on the host (an absolute one, or one climbing out), a hard
// link to outside the image, a device node or a FIFO, and an image over
// lim are refused with the layer (its index and diff ID) and the path
// named. Symbolic links
// themselves are kept whatever they point to: they are resolved only in
// the sandbox, where the image is /. Unpacking stops when ctx ends (a
// cancelled job, its time limit).
func unpackImage(ctx context.Context, archive, rootfs string, lim ImageLimits) (imageConfig, error) {
	lim = lim.withDefaults()
	fi, err := os.Stat(archive)
	if err != nil {
		return imageConfig{}, imageErr("reading the image archive: %v", err)
	}
	img, done, err := openImage(archive, filepath.Dir(rootfs))
	if err != nil {
		return imageConfig{}, err
	}
	defer done()
	layers, err := img.Layers()
	if err != nil {
		return imageConfig{}, imageErr("reading the image's layers: %v", err)
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return imageConfig{}, err
	}
	defer root.Close()
	u := &unpacker{ctx: ctx, root: root, lim: lim, max: lim.unpacked(fi.Size()), archive: fi.Size()}
	// The layers are named by the diff IDs their config gives, which
	// costs nothing: asking a layer for its DiffID may decompress all of
	// it to hash it, before any limit is applied.
	cfg, err := img.ConfigFile()
	if err != nil {
		return imageConfig{}, imageErr("reading the image's config: %v", err)
	}
	for i, l := range layers {
		name := fmt.Sprintf("layer %d", i)
		if i < len(cfg.RootFS.DiffIDs) {
			name += " (" + cfg.RootFS.DiffIDs[i].String() + ")"
		}
		rc, err := l.Uncompressed()
		if err != nil {
			return imageConfig{}, imageErr("%s: %v", name, err)
		}
		err = u.layer(name, rc)
		rc.Close()
		if err != nil {
			return imageConfig{}, err
		}
	}
	for _, d := range imageMountpoints() {
		if err := mountpoint(root, d); err != nil {
			return imageConfig{}, imageErr("making the mount point /%s in the image: %v", d, err)
		}
	}
	return imageConfig{Env: cfg.Config.Env}, nil
}

// imageMountpoints are the folders the sandbox mounts over an image
// (bwrapImageArgs): /proc, /dev, /tmp, the run's folders under /d5, and
// the /sys entries GPU drivers read (gpuSysPaths). The image is mounted
// read-only, so bwrap cannot make them when it starts.
func imageMountpoints() []string {
	dirs := []string{"proc", "dev", "tmp", "sys", "d5/bundle", "d5/run", "d5/ctl", "d5/lib", "d5/data"}
	for _, d := range gpuSysPaths {
		if strings.HasPrefix(d, "/sys/") {
			dirs = append(dirs, strings.TrimPrefix(d, "/"))
		}
	}
	return dirs
}

// mountpoint makes dir a folder of the image, each of its parents a folder
// too: what the image has in their place (a file, or a link, which bwrap
// would follow when it mounts, placing the mount elsewhere) is removed.
// rootfs is the runner's own copy, so this changes no one's image.
func mountpoint(root *os.Root, dir string) error {
	p := ""
	for _, part := range strings.Split(dir, "/") {
		p = path.Join(p, part)
		fi, err := root.Lstat(p)
		if err == nil && fi.IsDir() {
			continue
		}
		if err == nil {
			if err := root.Remove(p); err != nil {
				return err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := root.Mkdir(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// openImage opens the image archive at archive: a `docker save` archive
// (manifest.json; `crane pull --format tarball` and the runner's own
// pulls write one too), or an OCI image layout (oci-layout, index.json,
// blobs/), as `podman save --format oci-archive` and `skopeo copy
// oci-archive:` write one. go-containerregistry reads a layout from a
// folder, so its files are copied into one made in dir, which done
// removes.
func openImage(archive, dir string) (img v1.Image, done func(), err error) {
	done = func() {}
	names, err := archiveNames(archive)
	if err != nil {
		return nil, done, imageErr("reading the image archive: %v", err)
	}
	switch {
	case names["manifest.json"]:
		img, err = tarball.ImageFromPath(archive, nil)
	case names["oci-layout"] && names["index.json"]:
		var tmp string
		if tmp, err = os.MkdirTemp(dir, ".image-layout-"); err != nil {
			return nil, done, err
		}
		done = func() { os.RemoveAll(tmp) }
		if err = extractLayout(archive, tmp); err == nil {
			img, err = layoutImage(tmp)
		}
	default:
		err = errors.New("neither a `docker save` archive (manifest.json) nor an OCI image layout (oci-layout, index.json)")
	}
	if err != nil {
		done()
		return nil, func() {}, imageErr("reading the image archive: %v", err)
	}
	return img, done, nil
}

// archiveNames are the names of the files of a tar, "./" taken off.
func archiveNames(archive string) (map[string]bool, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names := map[string]bool{}
	tr := tar.NewReader(f) // an *os.File: tar.Reader seeks over the data
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		names[path.Clean(strings.TrimPrefix(h.Name, "./"))] = true
	}
}

// layoutBlob is the name of a blob of an OCI image layout.
var layoutBlob = regexp.MustCompile(`^blobs/[a-z0-9]+/[a-f0-9]+$`)

// extractLayout copies an OCI image layout's files out of the tar at
// archive into dir: oci-layout, index.json and the blobs, regular files
// only, through an os.Root. Whatever else the tar holds is left out. The
// files' bytes are the tar's own, so they are no more than the archive.
func extractLayout(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if h.Typeflag != tar.TypeReg || !(name == "oci-layout" || name == "index.json" || layoutBlob.MatchString(name)) {
			continue
		}
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		out, err := root.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, io.LimitReader(tr, h.Size))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}

// layoutImage is the image of the OCI image layout in dir: the one its
// index names, or, where it names several (one per platform, directly or
// in a nested index), the one for this runner's platform.
func layoutImage(dir string) (v1.Image, error) {
	idx, err := ocilayout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	var all, here []v1.Image
	var add func(idx v1.ImageIndex, depth int) error
	add = func(idx v1.ImageIndex, depth int) error {
		m, err := idx.IndexManifest()
		if err != nil {
			return err
		}
		for _, d := range m.Manifests {
			switch {
			case d.MediaType.IsImage():
				img, err := idx.Image(d.Digest)
				if err != nil {
					return err
				}
				all = append(all, img)
				if d.Platform != nil && d.Platform.OS == runtime.GOOS && d.Platform.Architecture == runtime.GOARCH {
					here = append(here, img)
				}
			case d.MediaType.IsIndex() && depth == 0:
				child, err := idx.ImageIndex(d.Digest)
				if err != nil {
					return err
				}
				if err := add(child, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := add(idx, 0); err != nil {
		return nil, err
	}
	switch {
	case len(all) == 1:
		return all[0], nil
	case len(here) == 1:
		return here[0], nil
	case len(all) == 0:
		return nil, errors.New("its OCI index names no image")
	}
	return nil, fmt.Errorf("its OCI index names %d images and not one for %s/%s: save only the image to run", len(all), runtime.GOOS, runtime.GOARCH)
}

// chownTree gives a tree to uid, links included, without following them.
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

func imageErr(format string, args ...any) error {
	return d5list.Errorf(d5list.EINVALID, "recipe image: "+format, args...)
}

type unpacker struct {
	ctx     context.Context
	root    *os.Root
	lim     ImageLimits
	max     int64 // bytes the layers may unpack to (ImageLimits.unpacked)
	archive int64 // the archive's size
	read    int64 // bytes read from the decompressed layers so far
	bytes   int64 // bytes written to regular files so far
	entries int
	// What the layer being applied wrote so far (written) and the
	// folders that hold it (holds): its whiteouts leave both alone.
	written, holds map[string]bool
}

// layer applies one layer: its files over the ones before, its whiteouts
// removing them.
func (u *unpacker) layer(layer string, r io.Reader) error {
	u.written, u.holds = map[string]bool{}, map[string]bool{}
	// Every byte tar.Reader takes from the decompressed stream is counted
	// as it is read, those it skips included.
	tr := tar.NewReader(&countingReader{u: u, r: r})
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if u.ctx.Err() != nil {
			return context.Cause(u.ctx)
		}
		if err != nil {
			return imageErr("%s: %v", layer, err)
		}
		u.entries++
		if u.entries > u.lim.Entries {
			return imageErr("%s: more than %d entries in the image", layer, u.lim.Entries)
		}
		if err := u.entry(tr, h); err != nil {
			if u.ctx.Err() != nil {
				return context.Cause(u.ctx)
			}
			return imageErr("%s: %s: %v", layer, h.Name, outOfRoot(err))
		}
	}
}

// errTooLarge is an image unpacking past its limit.
var errTooLarge = errors.New("the image unpacks past its limit")

// tooLarge says what the limit is and why.
func (u *unpacker) tooLarge() error {
	return fmt.Errorf("%w of %d bytes (the runner allows %g times the archive's %d bytes, at least %d and at most %d bytes)",
		errTooLarge, u.max, u.lim.Ratio, u.archive, u.lim.Floor, u.lim.Bytes)
}

// countingReader counts the decompressed bytes of the layers against the
// unpacker's limit, and stops at ctx's end.
type countingReader struct {
	u *unpacker
	r io.Reader
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.u.ctx.Err() != nil {
		return 0, context.Cause(c.u.ctx)
	}
	// One byte past the limit is enough to know it is passed.
	if left := c.u.max - c.u.read + 1; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.u.read += int64(n)
	if c.u.read > c.u.max {
		return n, c.u.tooLarge()
	}
	return n, err
}

// outOfRoot says in words what os.Root's refusal of a path through a link
// that leaves the root means here.
func outOfRoot(err error) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("the path goes through a symbolic link out of the image's root, which is not followed on the runner (%v)", err)
	}
	return err
}

func (u *unpacker) entry(tr *tar.Reader, h *tar.Header) error {
	// Every entry's data counts, whatever its type: a skipped one is
	// read (and decompressed) all the same.
	if h.Size < 0 || h.Size > u.max-u.read || h.Size > u.max-u.bytes {
		return fmt.Errorf("an entry of %d bytes: %w", h.Size, u.tooLarge())
	}
	name, err := layerPath(h.Name)
	if err != nil || name == "" {
		return err
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	// Whiteouts (the OCI layer format): ".wh..wh..opq" empties its folder
	// of what earlier layers put there; ".wh.NAME" removes NAME. Both
	// apply to the layers below only, never to what this layer wrote,
	// before or after them in its tar (OCI image-spec, "Whiteouts").
	if base == ".wh..wh..opq" {
		entries, err := fs.ReadDir(u.root.FS(), dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			if err := u.removeLower(path.Join(dir, e.Name())); err != nil {
				return err
			}
		}
		return nil
	}
	if gone, ok := strings.CutPrefix(base, ".wh."); ok {
		if gone == "" || gone == "." || gone == ".." {
			return errors.New("a whiteout of no file")
		}
		return u.removeLower(path.Join(dir, gone))
	}
	u.written[name] = true
	for d := dir; d != "."; d = path.Dir(d) {
		u.holds[d] = true
	}
	if err := u.root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode := fs.FileMode(h.Mode) & fs.ModePerm // no setuid, setgid or sticky bits
	switch h.Typeflag {
	case tar.TypeDir:
		if fi, err := u.root.Lstat(name); err == nil && !fi.IsDir() {
			if err := u.root.Remove(name); err != nil {
				return err
			}
		}
		return u.root.MkdirAll(name, mode|0o700)
	case tar.TypeReg:
		if err := u.replace(name); err != nil {
			return err
		}
		f, err := u.root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode|0o600)
		if err != nil {
			return err
		}
		n, err := io.Copy(f, io.LimitReader(tr, h.Size))
		u.bytes += n
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case tar.TypeSymlink:
		// Any target is kept as it is, absolute ones included (Debian's
		// /usr/bin/awk -> /etc/alternatives/awk): inside the sandbox the
		// image is /, so an absolute link resolves in the image and a
		// relative one cannot climb above /, as enroot, Charliecloud and
		// umoci treat them. On the host a link is never followed out of
		// rootfs: every later entry, hard link and whiteout goes through
		// u.root, which refuses a path through an absolute link or one
		// that climbs out of the root.
		if h.Linkname == "" {
			return errors.New("a symbolic link to nothing")
		}
		if err := u.replace(name); err != nil {
			return err
		}
		return u.root.Symlink(h.Linkname, name)
	case tar.TypeLink:
		target, err := layerPath(h.Linkname)
		if err != nil {
			return fmt.Errorf("a hard link out of the image (to %s)", h.Linkname)
		}
		if err := u.replace(name); err != nil {
			return err
		}
		return u.root.Link(target, name)
	case tar.TypeChar, tar.TypeBlock:
		return errors.New("a device file: the sandbox provides /dev")
	case tar.TypeFifo:
		return errors.New("a FIFO")
	}
	return nil // PAX headers and the like carry no file
}

// removeLower removes p as the layers below left it: everything at or
// under p that the current layer did not write, except the folders that
// hold what it wrote.
func (u *unpacker) removeLower(p string) error {
	if !u.written[p] && !u.holds[p] {
		return u.root.RemoveAll(p)
	}
	fi, err := u.root.Lstat(p)
	if err != nil || !fi.IsDir() {
		return err
	}
	entries, err := fs.ReadDir(u.root.FS(), p)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := u.removeLower(path.Join(p, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// replace removes what an earlier layer left at name, unless it is a
// folder: a layer's file replaces the file of the layers below.
func (u *unpacker) replace(name string) error {
	fi, err := u.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return u.root.RemoveAll(name)
	}
	return u.root.Remove(name)
}

// layerPath is an entry's path inside the image, relative, with "./" and
// a leading "/" taken off; a path with ".." is refused.
func layerPath(name string) (string, error) {
	n := strings.TrimPrefix(strings.TrimPrefix(name, "./"), "/")
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", errors.New(`a path with ".."`)
		}
	}
	return strings.TrimSuffix(path.Clean("/" + n)[1:], "/"), nil
}
