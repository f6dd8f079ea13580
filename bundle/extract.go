package bundle

import (
	"bytes"
	"io"
	"os"
	"path"

	d5list "github.com/deep500/d5list"
)

// Extract unpacks the bundle archive at path into dir, which must be empty
// or absent, with every check of Open: a refused bundle leaves dir empty.
// A folder wrapping the bundle is stripped, so that dir/code/run.sh is the
// recipe's entrypoint code/run.sh. Files are created through an os.Root, so
// no name can reach outside dir, and only regular files and folders are
// created (executable bits kept, nothing else).
func Extract(path, dir string, lim Limits) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return d5list.Errorf(d5list.EINTERNAL, "creating %s: %v", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return d5list.Errorf(d5list.ECONFLICT, "extracting into %s: the folder is not empty", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	l := newLoader(lim)
	l.sink = &rootSink{root: root}
	if err = l.readFile(path); err == nil {
		_, err = l.finish()
	}
	if err != nil {
		if ents, rerr := os.ReadDir(dir); rerr == nil {
			for _, e := range ents {
				_ = root.RemoveAll(e.Name())
			}
		}
		return err
	}
	return nil
}

type rootSink struct{ root *os.Root }

func (s *rootSink) file(name string, exec bool, data []byte, body io.Reader) error {
	if d := path.Dir(name); d != "." {
		if err := s.root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	mode := os.FileMode(0o644)
	if exec {
		mode = 0o755
	}
	f, err := s.root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if body == nil {
		body = bytes.NewReader(data)
	}
	_, err = io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
