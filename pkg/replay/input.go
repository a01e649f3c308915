package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/redact"
)

// Source is one capture a replay reads, open: its records, and its name
// and format as reports give them. Both replays, the built-in one and one
// into a target, open their captures with OpenCapture and skip their bad
// records with MaxBad.
type Source struct {
	*capture.Reader
	Input  Input
	file   io.Closer // the file under Reader; nil for stdin and streams
	closed bool
}

// OpenCapture opens the capture name: a file (gzip is read as is), "-"
// for stdin, nats://HOST:PORT/STREAM or kafka://HOST:PORT/TOPIC. read, if not nil, counts the
// bytes read of a file. An error is the replay's: a capture that cannot
// be read is invalid input at its file (or line), one sentence.
func OpenCapture(ctx context.Context, name string, stdin io.Reader, opts capture.Options, read *atomic.Int64) (*Source, error) {
	src := &Source{Input: Input{File: name}}
	var r io.Reader
	switch {
	case name == "-":
		r, src.Input.File = stdin, "stdin"
	case broker.IsStreamURL(name), broker.IsTopicURL(name):
		open, ok := capture.Source(name)
		if !ok {
			return nil, problem.Usagef("cannot read the capture %s: this build of redeliver reads no %s", redact.String(name), name[:strings.Index(name, ":")])
		}
		rd, err := open(ctx, name, opts)
		if err != nil {
			return nil, err
		}
		src.Reader, src.Input.Format = rd, string(rd.Format())
		return src, nil
	default:
		f, err := os.Open(name)
		if err != nil {
			return nil, problem.Usagef("cannot read the capture %s: %v", name, unwrapPath(err))
		}
		r, src.file = f, f
		if read != nil {
			r = &countingReader{r: f, n: read}
		}
	}
	rd, err := capture.Open(src.Input.File, r, opts)
	if err != nil {
		src.Close()
		var be *capture.BadRecordError
		var ue *capture.UnknownFormatError
		switch {
		case errors.As(err, &be):
			return nil, problem.Invalid(be.At, "%s", be.Reason)
		case errors.As(err, &ue):
			return nil, problem.Invalid(problem.Pos{File: ue.File}, "%s", ue.Sentence())
		}
		return nil, problem.Invalid(problem.Pos{File: src.Input.File}, "%v", err)
	}
	src.Reader, src.Input.Format = rd, string(rd.Format())
	return src, nil
}

// Close closes the capture's reader and its file; again, it does nothing.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.Reader != nil {
		err = s.Reader.Close()
	}
	if s.file != nil {
		if ferr := s.file.Close(); err == nil {
			err = ferr
		}
	}
	return err
}

// MaxBad is --max-bad, as both replays apply it: up to Limit bad
// records are skipped, each named on Warn (when set), and the one past
// Limit, or one after which the file cannot be read, stops the replay as
// invalid input at its line.
type MaxBad struct {
	Limit int
	Warn  io.Writer
	n     int
}

// Skip counts the bad record be: nil if it is skipped, else the error
// that stops the replay.
func (b *MaxBad) Skip(be *capture.BadRecordError) error {
	b.n++
	if b.n > b.Limit || be.Fatal {
		hint := fmt.Sprintf(" (--max-bad %d allows that many bad records to be skipped)", b.n)
		if be.Fatal {
			hint = " (the rest of the file cannot be read)"
		}
		return problem.Invalid(be.At, "%s%s", be.Reason, hint)
	}
	if b.Warn != nil {
		fmt.Fprintf(b.Warn, "redeliver: skipped %s\n", be)
	}
	return nil
}

// Count is how many bad records Skip was given.
func (b *MaxBad) Count() int { return b.n }

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// countingReader counts the bytes read from a capture file, for the
// progress line: bytes read of the file's size.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
