package sqlite

import "hash/maphash"

// seen remembers, in fixed memory, which (event id, consumer) pairs got a
// marker in this database: a Bloom filter. It never forgets one, so "not
// seen" is certain and the marker lookup of a new event (most deliveries of
// a capture) can be answered without a query; "seen" may be wrong, and then
// the lookup runs as before. It can only be used on a database that held
// no marker when the replay began (not on a resumed file), and a marker
// rolled back or purged stays "seen", which only costs a query.
type seen struct {
	bits   []uint64
	blocks uint64 // of seenBlock bits
	free   func() // returns bits to the operating system
	seed   maphash.Seed
}

// seenBits is the filter's size: 8 MiB. With seenProbes bits an entry, one
// lookup in 60,000 runs a query that finds nothing after a million events,
// one in 25 after ten million; the memory is the same for both. The probes
// of an entry fall in one block of 512 bits, one cache line: a lookup
// waits for one read of memory instead of one a probe (the filter is far
// larger than the processor's caches), for about the same false hits.
const (
	seenBits   = 1 << 26
	seenProbes = 4
	seenBlock  = 512 // bits
)

func newSeen() *seen { return newSeenPart(1) }

// newSeenPart is the filter of one of parts stores that share a replay's
// markers between them (SplitDB): a part holds its share of them, in its
// share of the bits, for the same false hits.
func newSeenPart(parts int) *seen {
	s := &seen{seed: maphash.MakeSeed(), blocks: seenBits / seenBlock / uint64(parts)}
	s.bits, s.free = words(int(s.blocks * seenBlock / 64))
	return s
}

// close gives the filter's memory back.
func (s *seen) close() {
	if s != nil && s.free != nil {
		s.free()
		s.bits, s.free = nil, nil
	}
}

// probes returns the entry's block (its first word) and its bits in the
// block, 9 bits of the hash each.
func (s *seen) probes(eventID, consumer string) (block []uint64, bits uint64) {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(eventID)
	h.WriteByte(0)
	h.WriteString(consumer)
	x := h.Sum64()
	const words = seenBlock / 64
	b := (x >> 36) % s.blocks * words
	return s.bits[b : b+words : b+words], x
}

func (s *seen) add(eventID, consumer string) {
	block, x := s.probes(eventID, consumer)
	for i := 0; i < seenProbes; i++ {
		bit := x & (seenBlock - 1)
		block[bit/64] |= 1 << (bit % 64)
		x >>= 9
	}
}

func (s *seen) has(eventID, consumer string) bool {
	block, x := s.probes(eventID, consumer)
	for i := 0; i < seenProbes; i++ {
		bit := x & (seenBlock - 1)
		if block[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
		x >>= 9
	}
	return true
}
