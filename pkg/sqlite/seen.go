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
	bits []uint64
	free func() // returns bits to the operating system
	seed maphash.Seed
}

// seenBits is the filter's size: 8 MiB. With seenProbes bits an entry, one
// lookup in 10^5 runs a query that finds nothing after a million events,
// one in 25 after ten million; the memory is the same for both.
const (
	seenBits   = 1 << 26
	seenProbes = 4
)

func newSeen() *seen {
	s := &seen{seed: maphash.MakeSeed()}
	s.bits, s.free = words(seenBits / 64)
	return s
}

// close gives the filter's memory back.
func (s *seen) close() {
	if s != nil && s.free != nil {
		s.free()
		s.bits, s.free = nil, nil
	}
}

func (s *seen) hash(eventID, consumer string) (uint64, uint64) {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(eventID)
	h.WriteByte(0)
	h.WriteString(consumer)
	x := h.Sum64()
	return x, x>>32 | x<<32 | 1
}

func (s *seen) add(eventID, consumer string) {
	a, b := s.hash(eventID, consumer)
	for i := uint64(0); i < seenProbes; i++ {
		bit := (a + i*b) % seenBits
		s.bits[bit/64] |= 1 << (bit % 64)
	}
}

func (s *seen) has(eventID, consumer string) bool {
	a, b := s.hash(eventID, consumer)
	for i := uint64(0); i < seenProbes; i++ {
		bit := (a + i*b) % seenBits
		if s.bits[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
	}
	return true
}
