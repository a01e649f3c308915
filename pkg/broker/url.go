package broker

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redeliver/redeliver/pkg/redact"
)

// The addresses of the logs a replay reads as captures, and the names a
// broker target's file may give, checked here without any client: a
// package that only parses or validates them (the file format, the
// replay) links no broker library.

// StreamURL names a JetStream stream read as a captured log:
// nats://HOST:PORT/STREAM, optionally ?seq=N (the first sequence to read)
// and &subject=FILTER.
type StreamURL struct {
	Server  string // nats://HOST:PORT
	Stream  string
	Seq     uint64 // first sequence read; 0 or 1 is the start of the stream
	Subject string // only messages on this subject (wildcards allowed)
}

// IsStreamURL reports whether a replay input names a NATS stream rather
// than a file.
func IsStreamURL(s string) bool { return strings.HasPrefix(s, "nats://") }

// ParseStreamURL reads nats://HOST:PORT/STREAM[?seq=N][&subject=S].
func ParseStreamURL(s string) (StreamURL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "nats" || u.Host == "" {
		return StreamURL{}, fmt.Errorf("%s is not a NATS stream address; expected nats://HOST:PORT/STREAM", redact.String(s))
	}
	name := strings.Trim(u.Path, "/")
	if name == "" || strings.ContainsAny(name, "/.*> \t") {
		return StreamURL{}, fmt.Errorf("%s names no stream; expected nats://HOST:PORT/STREAM (a stream name has no / . * > or spaces)", redact.String(s))
	}
	su := StreamURL{Server: (&url.URL{Scheme: "nats", User: u.User, Host: u.Host}).String(), Stream: name}
	q := u.Query()
	for k := range q {
		if k != "seq" && k != "subject" {
			return StreamURL{}, fmt.Errorf("%s: unknown parameter %q; expected seq or subject", redact.String(s), k)
		}
	}
	if v := q.Get("seq"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return StreamURL{}, fmt.Errorf("%s: seq=%s is not a stream sequence (a whole number from 1)", redact.String(s), v)
		}
		su.Seq = n
	}
	su.Subject = q.Get("subject")
	return su, nil
}

// TopicURL names a Kafka topic read as a captured log:
// kafka://HOST:PORT[,HOST:PORT…]/TOPIC, optionally ?partition=N (that
// partition alone) and &offset=N (the first offset read in each partition).
type TopicURL struct {
	Brokers   []string
	Topic     string
	Partition int32 // -1: every partition
	Offset    int64 // first offset read; 0 is the start of the log
}

// IsTopicURL reports whether a replay input names a Kafka topic rather
// than a file.
func IsTopicURL(s string) bool { return strings.HasPrefix(s, "kafka://") }

// ParseTopicURL reads kafka://HOST:PORT/TOPIC[?partition=N][&offset=N].
func ParseTopicURL(s string) (TopicURL, error) {
	rest, ok := strings.CutPrefix(s, "kafka://")
	hosts, path, _ := strings.Cut(rest, "/")
	if !ok || hosts == "" {
		return TopicURL{}, fmt.Errorf("%s is not a Kafka topic address; expected kafka://HOST:PORT/TOPIC", redact.String(s))
	}
	u, err := url.Parse("kafka://x/" + path)
	if err != nil {
		return TopicURL{}, fmt.Errorf("%s is not a Kafka topic address (%v); expected kafka://HOST:PORT/TOPIC", redact.String(s), err)
	}
	tu := TopicURL{Partition: -1}
	for _, h := range strings.Split(hosts, ",") {
		if _, port, err := splitHostPort(h); err != nil || port == "" {
			return TopicURL{}, fmt.Errorf("%s: broker %q is not HOST:PORT; expected kafka://HOST:PORT/TOPIC", redact.String(s), h)
		}
		tu.Brokers = append(tu.Brokers, h)
	}
	tu.Topic = strings.Trim(u.Path, "/")
	if tu.Topic == "" || !TopicName(tu.Topic) {
		return TopicURL{}, fmt.Errorf("%s names no topic; expected kafka://HOST:PORT/TOPIC (a topic name has letters, digits, . _ and - only)", redact.String(s))
	}
	q := u.Query()
	for k := range q {
		if k != "partition" && k != "offset" {
			return TopicURL{}, fmt.Errorf("%s: unknown parameter %q; expected partition or offset", redact.String(s), k)
		}
	}
	if v := q.Get("partition"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			return TopicURL{}, fmt.Errorf("%s: partition=%s is not a partition number (a whole number from 0)", redact.String(s), v)
		}
		tu.Partition = int32(n)
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return TopicURL{}, fmt.Errorf("%s: offset=%s is not an offset (a whole number from 0)", redact.String(s), v)
		}
		tu.Offset = n
	}
	return tu, nil
}

func splitHostPort(h string) (string, string, error) {
	i := strings.LastIndexByte(h, ':')
	if i <= 0 {
		return "", "", fmt.Errorf("no port")
	}
	port := h[i+1:]
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("bad port")
	}
	return h[:i], port, nil
}

// TopicName reports whether s is a legal Kafka topic name: at most 249
// letters, digits, '.', '_' and '-', and not "." or "..".
func TopicName(s string) bool {
	if len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
