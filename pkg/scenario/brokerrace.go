package scenario

import (
	"runtime"

	"go.yaml.in/yaml/v3"
)

// ownersKnown: redeliver can tell which started instance owns a
// connection to its database proxy (from /proc).
const ownersKnown = runtime.GOOS == "linux"

// brokerRace checks a concurrent step of a broker target: the event is
// published N times for N started instances to take one copy each, and
// the race is explored at their statements, which redeliver sees
// through its database proxy. Kafka keeps one key's records in one
// partition, read by one member in order: there the copies go to
// partitions of different members, as an outbox republishing the event
// with another partitioner puts them, and the topic needs as many
// partitions as copies.
func (l *loader) brokerRace(n *yaml.Node, st *Step) {
	t := l.s.Target
	k, _ := t.Broker.(*KafkaTarget)
	switch {
	case k != nil && k.Create && k.Partitions > 0 && k.Partitions < st.Concurrent:
		l.errorf(n, "concurrent: %d behind Kafka produces the %d copies to %d partitions held by %d members of the group, and create makes topic %s with partitions: %d: set partitions to %d or more", st.Concurrent, st.Concurrent, st.Concurrent, st.Concurrent, k.Topic, k.Partitions, st.Concurrent)
	case l.s.Effects == nil || !l.s.Effects.Proxy:
		l.errorf(n, "concurrent behind a broker is explored at the consumer's SQL statements, which redeliver sees only through its proxy: add proxy: true to effects and point the consumer at ${%s}, or publish the event again with times", DBURLVar)
	case t.Start == nil:
		l.errorf(n, "concurrent: %d behind a broker publishes the event %d times for %d instances redeliver started to take one copy each, and this target has no start: add target start with instances: %d", st.Concurrent, st.Concurrent, st.Concurrent, st.Concurrent)
	case t.Start.Instances < st.Concurrent:
		l.errorf(n, "concurrent: %d behind a broker publishes the event %d times for %d started instances to take one copy each, and start has instances: %d: set instances to %d or more", st.Concurrent, st.Concurrent, st.Concurrent, t.Start.Instances, st.Concurrent)
	case !ownersKnown:
		l.errorf(n, "concurrent behind a broker holds one instance's connection while the others run, and redeliver tells which instance owns a connection from /proc, which only Linux has")
	}
}
