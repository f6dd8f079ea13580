package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing bytes [off, off+n) of f
// to the disk now, without waiting for them: the dirty pages of an upload
// are otherwise written only when its fsync asks (a 1 GiB upload stays
// under the kernel's background threshold), so the fsync would wait for
// all of them after the last byte arrived instead of for the last few.
// It is advice: an error leaves the pages to the fsync.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
