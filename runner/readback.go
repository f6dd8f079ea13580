package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// errNotRegular is a file a run left that the runner will not read: a
// symbolic link (which could point at any file the runner's user may
// read), or a FIFO, socket or device (which could block the runner for
// ever or never end).
var errNotRegular = errors.New("not a regular file")

// openRunFile opens a file an untrusted run may have replaced, the only
// way the runner reads anything back from a run: the run's folder opened
// without following a link (O_NOFOLLOW|O_DIRECTORY), the file opened in it
// with openat and a single name component, without following a link
// (O_NOFOLLOW), without blocking on a FIFO (O_NONBLOCK), and kept only if
// what it opened is a regular file (fstat). os.Root is not enough here: it
// follows a link that stays inside the folder. A file that does not exist
// is os.ErrNotExist; anything else that is not a regular file is
// errNotRegular, with what it was.
func openRunFile(path string) (*os.File, error) {
	dir, name := filepath.Split(path)
	if name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("%s: not a file name", path)
	}
	dfd, err := syscall.Open(filepath.Clean(dir), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer syscall.Close(dfd)
	fd, err := openat(dfd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("%s is a symbolic link: %w", name, errNotRegular)
	case errors.Is(err, syscall.ENXIO): // a socket, or a device with no driver
		return nil, fmt.Errorf("%s is a socket or a device: %w", name, errNotRegular)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %s: %w", name, fileKind(st.Mode()), errNotRegular)
	}
	return f, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	}
	return "not a regular file"
}

// openat retries on EINTR, which a signal to the runner can cause.
func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// readResult reads the MLLOG file a run wrote, through openRunFile: a link,
// FIFO or device in its place fails the run, with what it was.
func readResult(name string, max int64, tail *lineTail) ([]byte, error) {
	f, err := openRunFile(name)
	if errors.Is(err, errNotRegular) {
		return nil, fmt.Errorf("$D5_RESULT_LOG: %v; the runner reads back only a regular file the run wrote%s", err, tail.String())
	}
	if err != nil {
		return nil, fmt.Errorf("the entrypoint exited without writing $D5_RESULT_LOG%s", tail.String())
	}
	defer f.Close()
	if max <= 0 {
		max = bundle.DefaultLimits().MaxResultBytes
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, d5list.Errorf(d5list.ETOOLARGE, "the result log is larger than %d bytes", max)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("the entrypoint wrote an empty $D5_RESULT_LOG%s", tail.String())
	}
	return b, nil
}
