package store

import (
	"encoding/json"
	"maps"
	"sync"

	d5list "github.com/deep500/d5list"
)

// decodedEntries keeps board entries decoded from their stored JSON, keyed
// by that JSON itself, so that a kept entry is right by construction: a
// row whose entry changed is a different key. After every change of a
// board each of its views is read again, and decoding the same unchanged
// entries was a quarter of what reading a thousand-row board cost.
type decodedEntries struct {
	mu sync.RWMutex
	m  map[string]*d5list.Entry
}

// maxDecodedEntries bounds the kept entries (about 1.2 KB each with their
// key): the default boards of a few benchmarks of a thousand systems.
const maxDecodedEntries = 8192

// decode returns the entry raw encodes, a copy of its own: callers set its
// rank and confirmation and may change its measures.
func (c *decodedEntries) decode(raw []byte) (d5list.Entry, error) {
	c.mu.RLock()
	kept, ok := c.m[string(raw)]
	c.mu.RUnlock()
	if ok {
		e := *kept
		e.Measures = maps.Clone(kept.Measures)
		return e, nil
	}
	var e d5list.Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, err
	}
	keep := e
	keep.Measures = maps.Clone(e.Measures)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]*d5list.Entry)
	}
	if len(c.m) >= maxDecodedEntries {
		// Map order is random: a random quarter goes, so no order of
		// reads can pin one board's entries out.
		for k := range c.m {
			if len(c.m) <= maxDecodedEntries*3/4 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[string(raw)] = &keep
	c.mu.Unlock()
	return e, nil
}
