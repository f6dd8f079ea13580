package bundle

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	d5list "github.com/deep500/d5list"
)

// ReadDir reads a submission folder with the same checks as an archive:
// symlinks and special files are refused, unknown top-level files are
// errors, and the limits apply. Version-control folders are left out.
func ReadDir(dir string, lim Limits) (*Bundle, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, d5list.Errorf(d5list.EINVALID, "reading the submission folder: %v", err)
	}
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return nil, d5list.Errorf(d5list.EINVALID, "%s is not a folder", dir)
	}
	l := newLoader(lim)
	l.decided = true // the folder itself is the bundle: no wrapper to strip
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		t := d.Type()
		switch {
		case t.IsDir():
			if vcsDirs[d.Name()] {
				return filepath.SkipDir
			}
			if !l.visit(rel, kindDir, false, nil) {
				return filepath.SkipAll
			}
			return nil
		case t&fs.ModeSymlink != 0:
			l.visit(rel, kindSymlink, false, nil)
		case t.IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			info, _ := f.Stat()
			exec := info != nil && info.Mode()&0o111 != 0
			ok := l.visit(rel, kindFile, exec, f)
			f.Close()
			if !ok {
				return filepath.SkipAll
			}
		default:
			l.visit(rel, kindOther, false, nil)
		}
		return nil
	})
	if err != nil {
		return nil, d5list.Errorf(d5list.EINVALID, "reading the submission folder: %v", err)
	}
	return l.finish()
}

// packTime is the modification time of every packed file, so that packing
// the same folder twice gives the same bytes.
var packTime = time.Date(2019, 5, 20, 0, 0, 0, 0, time.UTC)

// Pack writes the submission folder dir as a deterministic tar.gz: names
// sorted, owner 0, fixed time, mode 0644 or 0755 (only the executable bit
// is kept, for code/ scripts). It checks the folder like ReadDir first, so
// that it never packs a bundle the portal would refuse for its layout;
// nothing is skipped except version-control folders.
func Pack(dir string, w io.Writer) error {
	b, err := ReadDir(dir, DefaultLimits())
	if err != nil {
		return err
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	names := make([]string, len(b.Files))
	for i, f := range b.Files {
		names[i] = f.Name
	}
	sort.Strings(names)
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, name := range names {
		if err := packFile(tw, root, name); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

func packFile(tw *tar.Writer, root, name string) error {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	// Checked again: the folder may have changed since ReadDir.
	if lst, err := os.Lstat(filepath.Join(root, filepath.FromSlash(name))); err != nil || !lst.Mode().IsRegular() {
		return d5list.Errorf(d5list.EINVALID, "%s: not a regular file (symlinks are refused)", name)
	}
	mode := int64(0o644)
	if st.Mode()&0o111 != 0 {
		mode = 0o755
	}
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: st.Size(), Mode: mode, ModTime: packTime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(f, st.Size()))
	if err != nil {
		return err
	}
	if n != st.Size() {
		return fmt.Errorf("%s changed while it was packed", name)
	}
	return nil
}
