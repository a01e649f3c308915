package capture

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/redeliver/redeliver/pkg/consumer"
)

// recordParser turns one line (or NUL-separated record) into an event, or
// says in a few words why it cannot.
type recordParser func(rec []byte, at consumer.Location) (Event, string)

// lineSource reads records separated by one byte, never holding more than
// max bytes of one: a longer record is skipped up to its end and reported.
type lineSource struct {
	name     string
	br       *bufio.Reader
	delim    byte
	max      int
	byRecord bool // NUL-separated dumps have no lines: count records instead
	parse    recordParser

	line int // number of the next record's first line (or the record)
	buf  []byte
	done bool
}

func newLineSource(name string, br *bufio.Reader, delim byte, max int, byRecord bool, parse recordParser) *lineSource {
	return &lineSource{name: name, br: br, delim: delim, max: max, byRecord: byRecord, parse: parse, line: 1}
}

// read returns the next record without its delimiter, how many newlines it
// held, and whether it was cut for being too long.
func (s *lineSource) read() (rec []byte, newlines int, tooLong bool, err error) {
	s.buf = s.buf[:0]
	for {
		chunk, err := s.br.ReadSlice(s.delim)
		if !tooLong {
			if len(s.buf)+len(chunk) > s.max+1 {
				tooLong = true
				s.buf = s.buf[:0]
			} else {
				s.buf = append(s.buf, chunk...)
			}
		}
		if s.delim != '\n' {
			newlines += bytes.Count(chunk, []byte{'\n'})
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			if !tooLong {
				s.buf = s.buf[:len(s.buf)-1] // the delimiter
			}
			if s.delim == '\n' {
				newlines = 1
			}
		}
		return s.buf, newlines, tooLong, err
	}
}

func (s *lineSource) next() (Event, error) {
	for {
		if s.done {
			return Event{}, io.EOF
		}
		rec, newlines, tooLong, err := s.read()
		at := consumer.Location{File: s.name, Line: s.line}
		if s.byRecord {
			s.line++
		} else {
			s.line += newlines
		}
		atEOF := false
		switch {
		case err == io.EOF:
			s.done, atEOF = true, true
		case err != nil:
			s.done = true
			if damaged(err) {
				return Event{}, &BadRecordError{At: at, Reason: "the compressed data is damaged or cut off here (" + err.Error() + "): the rest of the file cannot be read", Fatal: true}
			}
			return Event{}, fmt.Errorf("read %s at line %d: %w", s.name, at.Line, err)
		}
		if tooLong {
			return Event{}, &BadRecordError{At: at, Reason: fmt.Sprintf("record is longer than the limit of %d bytes", s.max)}
		}
		rec = bytes.TrimSpace(rec)
		if len(rec) == 0 {
			if s.byRecord {
				s.line-- // blank space between records is not a record
			}
			continue
		}
		if !utf8.Valid(rec) {
			return Event{}, &BadRecordError{At: at, Reason: "record is not valid UTF-8"}
		}
		if !validJSON(rec) {
			why := "record is not valid JSON"
			if atEOF {
				why = "the file ends in the middle of a record (truncated?)"
			}
			return Event{}, &BadRecordError{At: at, Reason: why}
		}
		if rec[0] != '{' {
			return Event{}, &BadRecordError{At: at, Reason: "record is not a JSON object"}
		}
		ev, why := s.parse(rec, at)
		if why != "" {
			return Event{}, &BadRecordError{At: at, Reason: why}
		}
		ev.At = at
		return ev, nil
	}
}

// damaged reports whether a read error is a fault of a gzip stream's data
// (bad input) rather than of the file system.
func damaged(err error) bool {
	var corrupt flate.CorruptInputError
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.As(err, &corrupt)
}
