package leaderboard

// Moment names the state of one benchmark's boards a rendering reads: the
// generations when it began, before its first read. A part of an answer
// kept under a moment (KeepPart) is handed only to renderings of that same
// moment (Part), so that an answer made of its own reads and of kept parts
// shows one state of the store. The parts every view of a board shares
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

// Part is the part kept as name for m, where m is still the current
// moment: no change of the board began or ended since m was taken, so the
// reads of the rendering that asks and those that made the part saw the
// same state. Call it after the rendering's first read.
func (c *Cache) Part(m Moment, name string) (any, bool) {
	if !m.settled {
		return nil, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.parts[partKey{m.benchmark, name}]
	if !ok || p.gen != m.gen || p.allGen != m.allGen || !c.current(m.benchmark, m.gen, m.allGen) {
		return nil, false
	}
	return p.value, true
}

// KeepPart keeps value as name for m, made by a rendering of moment m
// from its reads, where m is still current; the caller must not change
// value afterwards.
func (c *Cache) KeepPart(m Moment, name string, value any) {
	if !m.settled {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.current(m.benchmark, m.gen, m.allGen) {
		return
	}
	key := partKey{m.benchmark, name}
	if _, ok := c.parts[key]; !ok && len(c.parts) >= maxParts {
		// Out of date parts go first; then any, map order being random.
		for k, p := range c.parts {
			if !c.current(k.benchmark, p.gen, p.allGen) {
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
	c.parts[key] = keptPart{gen: m.gen, allGen: m.allGen, value: value}
}
