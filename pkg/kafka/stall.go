package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// stallWindow is how far back a drain that timed out looks for the
// group's progress: long enough to span a few kills and restarts, so a
// group that is slow under the nemesis is told from one that is stuck.
const stallWindow = 30 * time.Second

// member is a member of the group as DescribeGroups shows it.
type member struct {
	id, client, host string
	partitions       []int32 // of the topic, assigned to it
}

// group is the consumer group as DescribeGroups shows it.
type group struct {
	state   string
	members []member
	err     error
}

// describe asks the group's coordinator for its state and members.
func (p *Publisher) describe(ctx context.Context) group {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	gs, err := p.adm.DescribeGroups(ctx, p.cfg.Group)
	if err != nil {
		return group{err: err}
	}
	d, ok := gs[p.cfg.Group]
	if !ok {
		return group{err: fmt.Errorf("the coordinator did not describe it")}
	}
	if d.Err != nil {
		return group{err: d.Err}
	}
	g := group{state: d.State}
	for _, m := range d.Members {
		x := member{id: m.MemberID, client: m.ClientID, host: m.ClientHost}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				if t.Topic == p.cfg.Topic {
					x.partitions = append(x.partitions, t.Partitions...)
				}
			}
		}
		slices.Sort(x.partitions)
		g.members = append(g.members, x)
	}
	return g
}

// stalled says what a drain that timed out knows of why: how far the
// group's committed offsets moved over the last look window, its state
// and members (kadm DescribeGroups), the members holding partitions with
// records left whose offsets did not move (not heard from), and the
// partitions with records left that no member holds.
func stalled(name string, first, last []partitionOffsets, d time.Duration, g group) string {
	var b strings.Builder
	moved, total, quiet := progress(first, last)
	over := d.Round(time.Millisecond)
	if total > 0 {
		fmt.Fprintf(&b, "; in the last %s the group committed %s (%s): it is moving, not stuck", over, records(total), strings.Join(moved, ", "))
	} else {
		fmt.Fprintf(&b, "; the group committed nothing in the last %s: its offsets are stuck", over)
	}
	if g.err != nil {
		fmt.Fprintf(&b, "; consumer group %s could not be described: %v", name, g.err)
		return b.String()
	}
	switch len(g.members) {
	case 0:
		fmt.Fprintf(&b, "; consumer group %s is %s with no member: nothing is consuming", name, g.state)
		return b.String()
	case 1:
		fmt.Fprintf(&b, "; consumer group %s is %s with 1 member: ", name, g.state)
	default:
		fmt.Fprintf(&b, "; consumer group %s is %s with %d members: ", name, g.state, len(g.members))
	}
	held := writeHolders(&b, g.members, quiet, over)
	var orphans []int32
	for _, o := range last {
		if o.uncommitted() > 0 && !held[o.partition] {
			orphans = append(orphans, o.partition)
		}
	}
	if len(orphans) > 0 {
		fmt.Fprintf(&b, "; %s with records left held by no member", partitionList(orphans))
	}
	return b.String()
}

// progress compares the group's committed offsets at the window's start
// (first) and end (last): the partitions that moved, in words, how many
// records were committed in all, and the partitions with records left
// that no commit moved (quiet).
func progress(first, last []partitionOffsets) (moved []string, total int64, quiet map[int32]bool) {
	was := map[int32]int64{}
	for _, o := range first {
		was[o.partition] = o.committedOrStart()
	}
	quiet = map[int32]bool{} // records left, and no commit over the window
	for _, o := range last {
		from, ok := was[o.partition]
		if !ok {
			from = o.committedOrStart()
		}
		if n := o.committedOrStart() - from; n > 0 {
			total += n
			moved = append(moved, fmt.Sprintf("partition %d from %d to %d", o.partition, from, o.committedOrStart()))
		} else if o.uncommitted() > 0 {
			quiet[o.partition] = true
		}
	}
	return moved, total, quiet
}

// writeHolders writes which member holds which partitions, then the
// members holding a quiet partition (not heard from over the window),
// and returns the partitions some member holds.
func writeHolders(b *strings.Builder, members []member, quiet map[int32]bool, over time.Duration) map[int32]bool {
	held := map[int32]bool{}
	var silent, parts []string
	for _, m := range members {
		who := memberName(m)
		s := who + " holds "
		if len(m.partitions) == 0 {
			s += "no partition"
		} else {
			s += partitionList(m.partitions)
		}
		parts = append(parts, s)
		for _, q := range m.partitions {
			held[q] = true
			if quiet[q] && !slices.Contains(silent, who) {
				silent = append(silent, who)
			}
		}
	}
	b.WriteString(strings.Join(parts, ", "))
	if len(silent) > 0 {
		fmt.Fprintf(b, "; not heard from in the last %s (records left on their partitions, nothing committed): %s", over, strings.Join(silent, ", "))
	}
	return held
}

// memberName names a member: its member id, client id and host.
func memberName(m member) string {
	return fmt.Sprintf("member %s (client %s, host %s)", m.id, m.client, strings.TrimPrefix(m.host, "/"))
}

func partitionList(ps []int32) string {
	s := make([]string, len(ps))
	for i, q := range ps {
		s[i] = fmt.Sprint(q)
	}
	if len(ps) == 1 {
		return "partition " + s[0]
	}
	return "partitions " + strings.Join(s, ", ")
}

func records(n int64) string {
	if n == 1 {
		return "1 record"
	}
	return fmt.Sprintf("%d records", n)
}
