package replay

// Over is a replay's totals over its course, kept for a replay of any
// length at the cost of a counter per bucket: at most OverBuckets
// buckets, each of Width consecutive places, twice as wide each time the
// replay outgrows them. The built-in replay's places are those of the
// capture (a redelivery counts at the place of the delivery it repeats);
// a replay into a target's are the milliseconds since it began.
type Over struct {
	Buckets []Bucket
	// Settled is the place after the last delivery where the replay
	// began to wait for a broker's consumer (see Waited); 0 when it did
	// not.
	Settled int64
	shift   uint  // Width is 1<<shift
	last    int64 // the last place counted
}

// OverBuckets is how many buckets Over keeps at most.
const OverBuckets = 100

// Bucket counts the deliveries of a stretch of a replay by outcome, in
// the order its report lists them (the built-in replay: processed,
// duplicate, conflict, failed, crashed; a replay into a target: acked,
// conflict, neither), and the crashes injected into them.
type Bucket struct {
	Outcomes [5]int64
	Crashes  int64
}

// Width is how many places one bucket counts.
func (o *Over) Width() int64 { return 1 << o.shift }

// Places is how many places the buckets span: up to the last one
// counted.
func (o *Over) Places() int64 {
	if len(o.Buckets) == 0 {
		return 0
	}
	return o.last + 1
}

// Add counts a delivery at place at (0 the first) with the outcome of
// index outcome.
func (o *Over) Add(at int64, outcome int, crash bool) {
	b := o.bucket(at)
	b.Outcomes[outcome]++
	if crash {
		b.Crashes++
	}
}

// Kill counts a crash at place at that no delivery stands for: an
// instance killed on a timer.
func (o *Over) Kill(at int64) { o.bucket(at).Crashes++ }

// Waited stretches the places up to to, counting nothing there: from
// place from, after its last delivery, the replay waited for a broker's
// consumer to take what was published.
func (o *Over) Waited(from, to int64) {
	if to > from {
		o.Settled = from
		o.bucket(to)
	}
}

// bucket is the bucket of place at, made when the buckets did not reach
// it yet.
func (o *Over) bucket(at int64) *Bucket {
	if at < 0 {
		at = 0
	}
	i := at >> o.shift
	for i >= OverBuckets {
		o.coarsen()
		i = at >> o.shift
	}
	if o.Buckets == nil {
		o.Buckets = make([]Bucket, 0, OverBuckets)
	}
	for int64(len(o.Buckets)) <= i {
		o.Buckets = append(o.Buckets, Bucket{})
	}
	o.last = max(o.last, at)
	return &o.Buckets[i]
}

// coarsen makes the buckets twice as wide, adding each pair into one.
func (o *Over) coarsen() {
	n := (len(o.Buckets) + 1) / 2
	for i := 0; i < n; i++ {
		b := o.Buckets[2*i]
		if 2*i+1 < len(o.Buckets) {
			b.add(o.Buckets[2*i+1])
		}
		o.Buckets[i] = b
	}
	o.Buckets = o.Buckets[:n]
	o.shift++
}

func (b *Bucket) add(c Bucket) {
	for k := range b.Outcomes {
		b.Outcomes[k] += c.Outcomes[k]
	}
	b.Crashes += c.Crashes
}

// merge adds p's buckets into o's, as wide as the wider of them.
func (o *Over) merge(p Over) {
	o.last = max(o.last, p.last)
	q := Over{Buckets: append([]Bucket(nil), p.Buckets...), shift: p.shift}
	for o.shift < q.shift {
		o.coarsen()
	}
	for q.shift < o.shift {
		q.coarsen()
	}
	for i, b := range q.Buckets {
		if i == len(o.Buckets) {
			o.Buckets = append(o.Buckets, Bucket{})
		}
		o.Buckets[i].add(b)
	}
}
