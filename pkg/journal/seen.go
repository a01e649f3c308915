package journal

import "hash/maphash"

// SeenFilter is a Bloom filter of the event ids a replay delivered: when
// it says an id is new, it is, and the journal is not asked. Its size is
// fixed (a long capture makes it answer "maybe" more often, and the
// journal is asked then), so the history stays off the heap.
type SeenFilter struct {
	bits [1 << 17]uint64 // 1 MiB: 3% of new ids asked about after 1,000,000
	seed maphash.Seed
}

// NewSeenFilter is an empty filter.
func NewSeenFilter() *SeenFilter { return &SeenFilter{seed: maphash.MakeSeed()} }

// probes are the filter's three bit positions for id.
func (f *SeenFilter) probes(id string) [3]uint64 {
	h := maphash.String(f.seed, id)
	h2 := h>>32 | h<<32
	n := uint64(len(f.bits) * 64)
	return [3]uint64{h % n, (h + h2) % n, (h + 2*h2) % n}
}

// Add adds id to the filter.
func (f *SeenFilter) Add(id string) {
	for _, p := range f.probes(id) {
		f.bits[p/64] |= 1 << (p % 64)
	}
}

// Maybe says whether id may have been added; false is certain.
func (f *SeenFilter) Maybe(id string) bool {
	for _, p := range f.probes(id) {
		if f.bits[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}
