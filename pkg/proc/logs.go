package proc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/redeliver/redeliver/pkg/redact"
)

// ConsumerLogs keeps the output of the consumer instances redeliver
// starts, which it otherwise reads only for the ready line and the last
// stderr lines of an error: one file per instance and start in Dir,
// instance-N.start-M.log, each line marked stdout or stderr, its secrets
// masked.
type ConsumerLogs struct {
	Dir string
	// Secrets are the configuration's secret values (a URL's password, a
	// secret-named ${VAR}), masked in the files as in every report.
	Secrets *redact.Secrets

	mu    sync.Mutex
	files []string
}

// Files are the files written so far, in the order they were opened.
func (l *ConsumerLogs) Files() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.files...)
}

// open makes the file of one start of an instance; env is the
// environment the instance runs with, whose secret values are masked
// wherever the consumer prints them.
func (l *ConsumerLogs) open(instance, start int, env []string) (*logFile, error) {
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(l.Dir, fmt.Sprintf("instance-%d.start-%d.log", instance, start))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.files = append(l.files, path)
	l.mu.Unlock()
	// The values of the environment's secret-named entries, inherited
	// ones included, are masked in the file besides the run's secrets
	// (not in the reports: an inherited PGPASSWORD=postgres would mask
	// every "postgres" there).
	var inherited redact.Secrets
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && redact.SecretName(k) {
			inherited.Add(v)
		}
	}
	return &logFile{f: f, env: &inherited, secrets: l.Secrets, open: 2}, nil
}

// logFile is one start's file: its two streams write whole lines into
// it, and it closes when both have ended.
type logFile struct {
	mu      sync.Mutex
	f       *os.File
	env     *redact.Secrets // the environment's
	secrets *redact.Secrets // the run's; nil masks by form only
	open    int             // streams not ended yet
}

// line writes one line of a stream, its secrets masked.
func (l *logFile) line(stream, s string) {
	if l == nil {
		return
	}
	s = l.secrets.String(l.env.String(strings.TrimRight(s, "\r")))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		// A full disk must not stop the consumer; its output is then lost.
		_, _ = l.f.WriteString(stream + " | " + s + "\n")
	}
}

// ended is called once by each stream at its end.
func (l *logFile) ended() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open--; l.open == 0 && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// close closes the file now: the consumer did not start.
func (l *logFile) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// lines is a stream's writer: it cuts what it is given into lines.
type lines struct {
	to     *logFile
	stream string
	part   []byte
}

func (w *lines) Write(p []byte) (int, error) {
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		w.to.line(w.stream, string(w.part[:i]))
		w.part = w.part[i+1:]
	}
	// A line without end is kept whole up to a bound, then written.
	if len(w.part) > 1<<20 {
		w.to.line(w.stream, string(w.part))
		w.part = nil
	}
	return len(p), nil
}

// end writes what is left of the last line, and ends the stream.
func (w *lines) end() {
	if len(w.part) > 0 {
		w.to.line(w.stream, string(w.part))
		w.part = nil
	}
	w.to.ended()
}
