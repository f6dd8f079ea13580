package leaderboard

// Moment names the state of one benchmark's boards a rendering reads: the
// generations when it began, before its first read. A part of an answer
// kept under a moment is handed only to renderings of that same moment
// (Part), so that an answer made of its own reads and of kept parts shows
// one state of the store. The parts every view of a board shares
// (its charts, its summary) are thus made once after a change, not once
// for each view.
type Moment struct {
	benchmark   string
	gen, allGen uint64
	// settled: no change of the board was open, so what the rendering
	// reads is what the last change left, and parts may be kept.
	settled bool
}

// maxParts bounds the kept parts (each a board's charts, tens of KB): the
// boards of a few benchmarks read with and without unverified entries.
const maxParts = 16

type partKey struct{ benchmark, name string }

type keptPart struct {
	gen, allGen uint64
	value       any
}

// Moment is benchmarkID's moment now. A rendering takes it before its
// first read, so that a change committed before that read has begun, and
// so changed the generations, before it was taken.
func (c *Cache) Moment(benchmarkID string) Moment {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return Moment{benchmark: benchmarkID, gen: c.gens[benchmarkID], allGen: c.allGen,
		settled: c.pending[benchmarkID] == 0 && c.allPending == 0}
}

// Part is the part named name of m's state: kept by an earlier rendering
// of m, or made now by build, within the caller's reads, and kept while m
// stays current. It is shared only while no change of the board began or
// ended since m was taken, so the reads of the rendering that asks and
// those that made the part saw one state. Call it after the rendering's
// first read; the caller must not change what it returns. Renderings of
// one moment under way together each make their own rather than wait for
// one another: each holds one of the cache's few rendering places, and a
// rendering waiting in one leaves a CPU idle (at a million submissions
// with four clients, waiting cost a sixth of the answers).
func (c *Cache) Part(m Moment, name string, build func() (any, error)) (any, error) {
	if !m.settled {
		return build()
	}
	key := partKey{m.benchmark, name}
	c.mu.RLock()
	p, ok := c.parts[key]
	ok = ok && p.gen == m.gen && p.allGen == m.allGen && c.current(m.benchmark, m.gen, m.allGen)
	c.mu.RUnlock()
	if ok {
		return p.value, nil
	}
	v, err := build()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.current(m.benchmark, m.gen, m.allGen) {
		c.keepPart(key, keptPart{gen: m.gen, allGen: m.allGen, value: v})
	}
	c.mu.Unlock()
	return v, nil
}

// keepPart stores p, with c.mu held.
func (c *Cache) keepPart(key partKey, p keptPart) {
	if _, ok := c.parts[key]; !ok && len(c.parts) >= maxParts {
		// Out of date parts go first; then any, map order being random.
		for k, q := range c.parts {
			if !c.current(k.benchmark, q.gen, q.allGen) {
				delete(c.parts, k)
			}
		}
		for k := range c.parts {
			if len(c.parts) < maxParts {
				break
			}
			delete(c.parts, k)
		}
	}
	c.parts[key] = p
}
