package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// sandboxSoftware is software outside /usr that a machine's runs need:
// GPU hosts keep PyTorch and its CUDA libraries in a conda or venv prefix
// (/opt/conda, /opt/torch/.venv), which the sandbox does not see unless
// it is bound in. ReadOnly folders are bound read-only at the same path;
// Path folders go first on each run's PATH.
type sandboxSoftware struct {
	ReadOnly []string
	Path     []string
}

// register adds --sandbox-ro and --sandbox-path to fs.
func (s *sandboxSoftware) register(fs *flag.FlagSet) {
	fs.Func("sandbox-ro", "process executor: a host folder bound read-only into the sandbox at the same path, for software outside /usr such as /opt/conda (repeat or comma-separate)",
		folderList(&s.ReadOnly))
	fs.Func("sandbox-path", "process executor: a folder put first on each run's PATH, such as /opt/conda/bin; it must be under /usr or a --sandbox-ro folder (repeat or comma-separate)",
		folderList(&s.Path))
}

// check says which --sandbox-path folder the sandbox would not see.
func (s sandboxSoftware) check() error {
	for _, p := range s.Path {
		seen := within(p, "/usr")
		for _, ro := range s.ReadOnly {
			seen = seen || within(p, ro)
		}
		if !seen {
			return fmt.Errorf("--sandbox-path %s: the sandbox does not see it; bind it (or a folder above it) with --sandbox-ro", p)
		}
	}
	return nil
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// folderList is a flag's parser of absolute, existing folders, repeated
// or comma-separated, appended to list.
func folderList(list *[]string) func(string) error {
	return func(v string) error {
		for _, d := range strings.Split(v, ",") {
			d = strings.TrimSpace(d)
			if !filepath.IsAbs(d) {
				return fmt.Errorf("%q is not an absolute path", d)
			}
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				return fmt.Errorf("%s is not a folder on this machine", d)
			}
			*list = append(*list, filepath.Clean(d))
		}
		return nil
	}
}
