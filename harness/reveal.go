package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxRevealHeader bounds a revealed file's header line.
const maxRevealHeader = 256

// ReadRevealed reads what a run revealed in its audit, from the stream the
// harness writes into $D5_REVEAL: each file a JSON header line ({"file",
// "size"}) and its bytes. It keeps only what the runner asked for (every
// section's digests, the challenged calls' outputs), each at exactly the
// size the task says, so a run can make the runner hold no more than
// that; anything else ends the reading with an error naming it. The
// caller drains the rest of r, so that a writer is never left blocked.
func (t *Task) ReadRevealed(r io.Reader, c Challenge) (map[string][]byte, error) {
	want := map[string]int{}
	for k, s := range t.sections {
		want[DigestsFile(k)] = s.calls * 8
		for _, i := range c[s.name] {
			if i >= 0 && i < s.calls {
				want[OutputFile(k, i)] = s.outSize(i)
			}
		}
	}
	got := map[string][]byte{}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readHeader(br)
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		var h struct {
			File string `json:"file"`
			Size int    `json:"size"`
		}
		if err := json.Unmarshal(line, &h); err != nil {
			return got, fmt.Errorf("a revealed file's header is not the harness's: %.60q", line)
		}
		size, ok := want[h.File]
		if !ok || h.Size != size || got[h.File] != nil {
			return got, fmt.Errorf("the run revealed %.40q (%d bytes), which the runner did not ask for", h.File, h.Size)
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(br, b); err != nil {
			return got, fmt.Errorf("%s: the run revealed %d bytes of %d", h.File, len(b), size)
		}
		got[h.File] = b
	}
}

// readHeader reads a line of at most maxRevealHeader bytes, without its
// newline; io.EOF where the stream ends cleanly before one.
func readHeader(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for len(line) <= maxRevealHeader {
		b, err := br.ReadByte()
		if err != nil {
			if len(line) == 0 && errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("a revealed file's header ends early: %w", err)
		}
		if b == '\n' {
			return bytes.TrimSpace(line), nil
		}
		line = append(line, b)
	}
	return nil, fmt.Errorf("a revealed file's header is longer than %d bytes", maxRevealHeader)
}

// Revealed is a ReadFunc over what ReadRevealed kept.
func Revealed(files map[string][]byte) ReadFunc {
	return func(name string, size int) ([]byte, error) {
		b, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("the run did not reveal %s", name)
		}
		if len(b) != size {
			return nil, fmt.Errorf("%s holds %d bytes, not %d", name, len(b), size)
		}
		return b, nil
	}
}
