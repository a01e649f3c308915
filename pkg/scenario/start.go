package scenario

import (
	"net/url"
	"time"

	"github.com/redeliver/redeliver/pkg/redact"
	"go.yaml.in/yaml/v3"
)

// Start is a long-running consumer redeliver starts, crashes and restarts.
type Start struct {
	Pos     Pos
	Command []string
	// Shown is Command as messages show it (see ExecTarget.Shown).
	Shown []string
	Env   map[string]string
	Dir   string
	// Ready is one of: an HTTP URL answering 2xx, a tcp://HOST:PORT
	// accepting connections, or a line on stdout containing ReadyLine.
	ReadyURL     string
	ReadyTCP     string
	ReadyLine    string
	ReadyTimeout time.Duration
	// Instances is how many copies of the consumer run at once (default
	// 1); more than one needs a broker target, which shares the work out.
	Instances    int
	InstancesPos Pos
}

// DBURLVar is the variable a started consumer's command and env use for
// its database address through the effects proxy.
const DBURLVar = "REDELIVER_DB_URL"

// JDBCURLVar is the same address as a PgJDBC URL
// (jdbc:postgresql://HOST:PORT/DB?user=…&password=…&currentSchema=…), for
// a consumer on the JVM, whose driver cannot read a libpq URL.
const JDBCURLVar = "REDELIVER_JDBC_URL"

func (l *loader) start(n *yaml.Node) *Start {
	s := &Start{Pos: l.pos(n), ReadyTimeout: DefaultReadyTimeout, Instances: 1}
	var cmdSeen, readySeen bool
	l.mapping(n, "target start", []field{
		{"command", func(k, v *yaml.Node) { cmdSeen = true; s.Command, s.Shown = l.xstrs(v, "command"), shown(v) }},
		{"env", func(k, v *yaml.Node) { s.Env = l.xmap(v, "env") }},
		{"dir", func(k, v *yaml.Node) { s.Dir = l.dir(v, "start dir") }},
		{"ready", func(k, v *yaml.Node) { readySeen = true; l.ready(s, v) }},
		{"ready_timeout", func(k, v *yaml.Node) { s.ReadyTimeout = l.timeout(v, "ready_timeout") }},
		{"instances", func(k, v *yaml.Node) {
			s.InstancesPos = l.pos(k)
			s.Instances, _ = l.integer(v, "instances", 1, MaxInstances)
			if s.Instances == 0 {
				s.Instances = 1
			}
		}},
	})
	if n.Kind != yaml.MappingNode {
		return s
	}
	if !cmdSeen {
		l.errorf(n, "target start needs command: the program that runs the consumer and its arguments")
	}
	if !readySeen {
		l.errorf(n, "target start needs ready: an HTTP URL such as http://127.0.0.1:8080/healthz, tcp://HOST:PORT, or {stdout: \"a line the consumer prints\"}")
	}
	return s
}

func (l *loader) ready(s *Start, n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		l.mapping(n, "ready", []field{
			{"stdout", func(k, v *yaml.Node) {
				if line, ok := l.xstr(v, "ready stdout"); ok {
					if line == "" {
						l.errorf(v, "ready stdout must not be empty")
					}
					s.ReadyLine = line
				}
			}},
		})
		if s.ReadyLine == "" && len(n.Content) == 0 {
			l.errorf(n, "ready needs stdout: the text of a line the consumer prints once it is ready")
		}
		return
	}
	v, ok := l.xstr(n, "ready")
	if !ok {
		return
	}
	u, err := url.Parse(v)
	switch {
	case err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "":
		s.ReadyURL = v
	case err == nil && u.Scheme == "tcp" && u.Host != "" && u.Port() != "":
		s.ReadyTCP = u.Host
	default:
		l.errorf(n, "ready must be an HTTP URL such as http://127.0.0.1:8080/healthz, tcp://HOST:PORT, or {stdout: \"a line\"}, not %s", redact.URL(v))
	}
}
