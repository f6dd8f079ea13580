package runner

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	d5list "github.com/deep500/d5list"
)

// ImageLimits bound what a competitor's container image may unpack to:
// its layers are untrusted input, and a few kilobytes of gzip can claim
// terabytes.
type ImageLimits struct {
	Bytes   int64 // regular files' bytes over all layers
	Entries int   // entries over all layers
}

// DefaultImageLimits allow an image of a framework and its libraries.
func DefaultImageLimits() ImageLimits { return ImageLimits{Bytes: 16 << 30, Entries: 500_000} }

// imageConfig is what a run takes from the image's config: its
// environment (PATH, library paths).
type imageConfig struct {
	Env []string
}

// unpackImage unpacks the image archive at archive (as `docker save` or
// `crane pull --format tarball` write one) layer by layer into rootfs,
// which must exist and be empty, as the root file system of a sandboxed
// run. Every entry is checked before anything of it is written, and every
// write goes through an os.Root, so nothing lands outside rootfs: a path
// with "..", a path through a symbolic link that leaves rootfs on the host
// (an absolute one, or one climbing out), a hard link to outside the
// image, a device node or a FIFO, and an image over lim are refused with
// the layer (its index and digest) and the path named. Symbolic links
// themselves are kept whatever they point to: they are resolved only in
// the sandbox, where the image is /.
func unpackImage(archive, rootfs string, lim ImageLimits) (imageConfig, error) {
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		return imageConfig{}, imageErr("reading the image archive: %v", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return imageConfig{}, imageErr("reading the image's layers: %v", err)
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return imageConfig{}, err
	}
	defer root.Close()
	u := &unpacker{root: root, lim: lim}
	for i, l := range layers {
		name := fmt.Sprintf("layer %d", i)
		if diffID, err := l.DiffID(); err == nil {
			name += " (" + diffID.String() + ")"
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
	// The sandbox binds the run's folders and /proc, /dev and /tmp over
	// the image, read-only as it is mounted: their mount points are made
	// now.
	for _, d := range []string{"proc", "dev", "tmp", "d5/bundle", "d5/run", "d5/data"} {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return imageConfig{}, imageErr("making /%s in the image: %v", d, err)
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return imageConfig{}, imageErr("reading the image's config: %v", err)
	}
	return imageConfig{Env: cfg.Config.Env}, nil
}

// imageConfigOf reads the config of the image archive at archive.
func imageConfigOf(archive string) (imageConfig, error) {
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		return imageConfig{}, imageErr("reading the image archive: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return imageConfig{}, imageErr("reading the image's config: %v", err)
	}
	return imageConfig{Env: cfg.Config.Env}, nil
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
	root    *os.Root
	lim     ImageLimits
	bytes   int64
	entries int
	// What the layer being applied wrote so far (written) and the
	// folders that hold it (holds): its whiteouts leave both alone.
	written, holds map[string]bool
}

// layer applies one layer: its files over the ones before, its whiteouts
// removing them.
func (u *unpacker) layer(layer string, r io.Reader) error {
	u.written, u.holds = map[string]bool{}, map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return imageErr("%s: %v", layer, err)
		}
		u.entries++
		if u.entries > u.lim.Entries {
			return imageErr("%s: more than %d entries in the image", layer, u.lim.Entries)
		}
		if err := u.entry(tr, h); err != nil {
			return imageErr("%s: %s: %v", layer, h.Name, outOfRoot(err))
		}
	}
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
		if h.Size < 0 || u.bytes+h.Size > u.lim.Bytes {
			return fmt.Errorf("the image's files pass %d bytes", u.lim.Bytes)
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
