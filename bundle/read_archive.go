package bundle

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	d5list "github.com/deep500/d5list"
)

// The archives a bundle comes in: a tar.gz, read as a stream, and a zip,
// read from its directory at its end. Each entry goes through the
// loader's checks (read.go) as it is read.

func isGzip(m []byte) bool { return len(m) >= 2 && m[0] == 0x1f && m[1] == 0x8b }
func isZip(m []byte) bool {
	return len(m) >= 4 && m[0] == 'P' && m[1] == 'K' && (m[2] == 3 && m[3] == 4 || m[2] == 5 && m[3] == 6)
}

// readFile dispatches on the archive's magic bytes. Errors returned here
// are about the file itself; entry problems are collected in l.rs.
func (l *loader) readFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return d5list.Errorf(d5list.EINVALID, "opening the bundle: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return d5list.Errorf(d5list.EINVALID, "opening the bundle: %v", err)
	}
	if !st.Mode().IsRegular() {
		return invalid(CodeNotArchive, "", 0, "the bundle is not a regular file")
	}
	if st.Size() > l.lim.MaxArchiveBytes {
		var rs reasons
		rs.add(CodeTooLarge, "", 0, "the archive is %d bytes, more than the limit of %d", st.Size(), l.lim.MaxArchiveBytes)
		return rs.err("bundle refused")
	}
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	switch {
	case isGzip(magic[:n]):
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return d5list.Errorf(d5list.EINVALID, "reading the bundle: %v", err)
		}
		cr := &countingReader{r: f, max: l.lim.MaxArchiveBytes}
		l.readTarGz(bufio.NewReader(cr), cr)
	case isZip(magic[:n]):
		l.readZip(f, st.Size())
	default:
		return invalid(CodeNotArchive, "", 0, "not a bundle archive: expected a tar.gz or a zip (by content, whatever the file name)")
	}
	return nil
}

// countingReader counts the compressed bytes pulled from the archive.
type countingReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.max > 0 && c.n > c.max {
		return n, &errLimit{fmt.Sprintf("the archive is larger than %d bytes", c.max)}
	}
	return n, err
}

func (l *loader) readTarGz(r io.Reader, cr *countingReader) {
	l.compressed = func() int64 { return cr.n }
	zr, err := gzip.NewReader(r)
	if err != nil {
		l.archiveErr("", err)
		return
	}
	tr := tar.NewReader(zr)
	for !l.stopped {
		h, err := tr.Next()
		if errors.Is(err, tar.ErrInsecurePath) && h != nil {
			err = nil // our own name checks are stricter
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			l.archiveErr("", err)
			return
		}
		kind := kindOther
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeRegA:
			kind = kindFile
		case tar.TypeDir:
			kind = kindDir
		case tar.TypeSymlink:
			kind = kindSymlink
		case tar.TypeLink:
			kind = kindHardlink
		case tar.TypeXGlobalHeader:
			continue // git archive puts the commit id here; it names no file
		}
		if !l.visit(h.Name, kind, h.Mode&0o111 != 0, tr) { // tr reads this entry's data
			return
		}
	}
}

func (l *loader) archiveErr(name string, err error) {
	var le *errLimit
	if errors.As(err, &le) {
		l.tooLarge(name, "%s", le.msg)
		return
	}
	l.rs.add(CodeCorrupt, name, 0, "the archive cannot be read: %v", err)
	l.stopped = true
}

// countingReaderAt counts the bytes the zip reader pulls from the file.
type countingReaderAt struct {
	r io.ReaderAt
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

func (l *loader) readZip(f io.ReaderAt, size int64) {
	cra := &countingReaderAt{r: f}
	n, ok := zipEntryCount(f, size, l.lim.MaxFiles)
	if !ok {
		l.archiveErr("", errors.New("the zip's central directory cannot be read"))
		return
	}
	if n > l.lim.MaxFiles {
		l.tooLarge("", "the zip directory lists more than %d entries", l.lim.MaxFiles)
		return
	}
	zr, err := zip.NewReader(cra, size)
	if errors.Is(err, zip.ErrInsecurePath) && zr != nil {
		err = nil
	}
	if err != nil {
		l.archiveErr("", err)
		return
	}
	cra.n = 0 // the ratio is about file data, not the directory
	l.compressed = func() int64 { return cra.n }
	for _, zf := range zr.File {
		if l.stopped {
			return
		}
		mode := zf.Mode()
		kind := kindOther
		switch {
		case mode&os.ModeSymlink != 0:
			kind = kindSymlink
		case mode.IsDir():
			kind = kindDir
		case mode.IsRegular():
			kind = kindFile
		}
		if kind != kindFile {
			if !l.visit(zf.Name, kind, false, nil) {
				return
			}
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			l.visit(zf.Name, kind, false, errReader{err})
			continue
		}
		ok := l.visit(zf.Name, kind, mode&0o111 != 0, rc)
		rc.Close()
		if !ok {
			return
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// zipEntryCount counts the entries of a zip's central directory by walking
// its headers, up to limit+1, before the zip reader allocates a record for
// each. The end record's own count is no bound: it holds 16 bits, and the
// zip reader compares it with the entries it read modulo 65,536, so a zip
// of 9.8 million entries can claim 150. ok is false when the directory
// cannot be walked (the zip reader would refuse it too).
func zipEntryCount(f io.ReaderAt, size int64, limit int) (count int, ok bool) {
	const eocdLen, locatorLen, headerLen = 22, 20, 46
	n := min(size, eocdLen+65535)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && err != io.EOF {
		return 0, false
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < eocdLen {
		return 0, false
	}
	end := size - n + int64(i) // where the directory's end records start
	dirSize := int64(binary.LittleEndian.Uint32(buf[i+12:]))
	if i >= locatorLen && bytes.Equal(buf[i-locatorLen:i-locatorLen+4], []byte("PK\x06\x07")) {
		// zip64: the locator points at the zip64 end record, which holds
		// the directory's 64-bit size; the directory ends where it starts.
		off := int64(binary.LittleEndian.Uint64(buf[i-locatorLen+8:]))
		rec := make([]byte, 56)
		if off < 0 || off > size-56 {
			return 0, false
		}
		if _, err := f.ReadAt(rec, off); err != nil || !bytes.Equal(rec[:4], []byte("PK\x06\x06")) {
			return 0, false
		}
		dirSize = int64(binary.LittleEndian.Uint64(rec[40:]))
		end = off
	}
	start := end - dirSize
	if dirSize < 0 || start < 0 {
		return 0, false
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, start, dirSize), 64<<10)
	head := make([]byte, headerLen)
	for {
		if _, err := io.ReadFull(r, head); err == io.EOF {
			return count, true
		} else if err != nil || !bytes.Equal(head[:4], []byte("PK\x01\x02")) {
			return 0, false
		}
		count++
		if count > limit {
			return count, true
		}
		skip := int64(binary.LittleEndian.Uint16(head[28:])) + int64(binary.LittleEndian.Uint16(head[30:])) + int64(binary.LittleEndian.Uint16(head[32:]))
		if _, err := r.Discard(int(skip)); err != nil {
			return 0, false
		}
	}
}
