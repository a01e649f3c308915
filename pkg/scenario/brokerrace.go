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
// through its database proxy. Kafka hands every record of one key to the
// one group member that reads its partition, in order: no two instances
// can race on copies of one event there.
func (l *loader) brokerRace(n *yaml.Node, st *Step) {
	t := l.s.Target
	switch {
	case t.Kafka != nil:
		l.errorf(n, "concurrent: %d races copies of one event on several instances, and Kafka hands every record of one key to the one group member that reads its partition, in order, so no two instances can race on them: race the consumer behind JetStream or RabbitMQ, or publish the event again with times", st.Concurrent)
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
