package portal

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// spooled is an upload stored in the blob store, and the bundle read from
// it while it arrived.
type spooled struct {
	sha     string
	size    int64
	existed bool // these bytes were stored before this upload
	// read says that bundle and readErr are bundle.Read's reading of the
	// upload; a zip, which keeps its directory at its end, is read from
	// the stored file instead.
	read    bool
	bundle  *bundle.Bundle
	readErr error
	// received is how long the upload took to arrive (stored, hashed and
	// read as it came), synced how long its fsync took after.
	received, synced time.Duration
}

// spoolBuffer is how much of the upload each read takes: large reads and
// writes cost fewer system calls than io.Copy's 32 KiB.
const spoolBuffer = 1 << 20

// spoolAhead bounds the buffers the check may lag behind the disk by.
const spoolAhead = 8

// spool streams the upload into the blob store, hashed on the fly so that
// it is known whether these bytes were already stored, and through the
// bundle's reading at the same time, on another core, instead of reading
// the stored file again once it is complete.
func (s *Service) spool(body io.Reader) (spooled, error) {
	start := time.Now()
	w, err := s.blobs.Create()
	if err != nil {
		return spooled{}, err
	}
	max := s.cfg.Limits.MaxArchiveBytes
	in := bufio.NewReaderSize(io.LimitReader(body, max+1), spoolBuffer)
	var up spooled
	var n int64
	if prefix, _ := in.Peek(4); bundle.Streamable(prefix) {
		n, err = s.copyReading(w, in, &up)
	} else {
		n, err = in.WriteTo(w)
	}
	if err != nil {
		w.Abort()
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return spooled{}, d5list.Errorf(d5list.ETOOLARGE, "the bundle is larger than the upload limit")
		}
		var de *d5list.Error
		if errors.As(err, &de) {
			return spooled{}, err // the store's own verdict, e.g. a full disk
		}
		return spooled{}, d5list.Errorf(d5list.EINVALID, "reading the upload: %v", err)
	}
	if n > max {
		w.Abort()
		return spooled{}, d5list.Errorf(d5list.ETOOLARGE, "the bundle is larger than %d bytes", max)
	}
	if n == 0 {
		w.Abort()
		return spooled{}, d5list.Errorf(d5list.EINVALID, "the upload is empty: send a .tar.gz or .zip bundle")
	}
	up.existed = s.blobs.Exists(w.Sum())
	up.received = time.Since(start)
	up.sha, up.size, err = w.Commit()
	up.synced = time.Since(start) - up.received
	return up, err
}

// copyReading copies in to w and, at the same time in another goroutine,
// through bundle.Read, whose reading it keeps in up.
func (s *Service) copyReading(w io.Writer, in io.Reader, up *spooled) (n int64, err error) {
	check := newChunkPipe(spoolAhead)
	done := make(chan struct{})
	go func() {
		defer close(done)
		up.bundle, up.readErr = bundle.Read(check, s.cfg.Limits)
		up.read = true
		check.drain() // a refused bundle stops reading early
	}()
	defer func() {
		check.CloseWithError(err)
		<-done
	}()
	return io.Copy(io.MultiWriter(w, check), in)
}

// chunkPipe hands what is written to it to one reader in another
// goroutine, holding up to n writes: unlike io.Pipe, a write returns once
// its bytes are copied, so that the writer and the reader work at the
// same time.
type chunkPipe struct {
	chunks chan []byte
	free   chan []byte
	cur    []byte // what the reader has left of the chunk it took
	held   []byte // that chunk, given back once read
	err    error  // CloseWithError's, set before chunks is closed
}

func newChunkPipe(n int) *chunkPipe {
	return &chunkPipe{chunks: make(chan []byte, n), free: make(chan []byte, n)}
}

// Write copies p into a chunk for the reader, waiting while n chunks are
// unread.
func (p *chunkPipe) Write(b []byte) (int, error) {
	var c []byte
	select {
	case c = <-p.free:
	default:
	}
	p.chunks <- append(c[:0], b...)
	return len(b), nil
}

// CloseWithError ends the stream: the reader gets err, or io.EOF for nil,
// once it has read everything written before.
func (p *chunkPipe) CloseWithError(err error) {
	p.err = err
	close(p.chunks)
}

func (p *chunkPipe) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		if p.held != nil {
			select {
			case p.free <- p.held:
			default:
			}
			p.held = nil
		}
		c, ok := <-p.chunks
		if !ok {
			if p.err != nil {
				return 0, p.err
			}
			return 0, io.EOF
		}
		p.cur, p.held = c, c
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// drain reads and drops the rest of the stream, so that the writer never
// waits on a reader that stopped.
func (p *chunkPipe) drain() { _, _ = io.Copy(io.Discard, p) }
