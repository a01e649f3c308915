package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/redeliver/redeliver/pkg/consumer"
)

// docSource reads captures that are JSON documents rather than lines: a
// CloudEvents batch array, a pretty-printed event, SQS ReceiveMessage
// responses and Lambda events (one or several, one after another). It
// walks the documents token by token and decodes one event at a time, so a
// batch of a million events is read in the memory of one.
type docSource struct {
	name  string
	cr    *lineCounter
	dec   *json.Decoder
	parse recordParser
	sqs   bool
	// stack of open containers: '[' an array of events, '{' an SQS/Lambda wrapper.
	stack []byte
	err   error
}

var errTooLong = errors.New("record too long")

func newDocSource(name string, br *bufio.Reader, opts Options, f Format) *docSource {
	cr := &lineCounter{r: br, max: int64(opts.MaxRecord)}
	dec := json.NewDecoder(cr)
	cr.dec = dec
	d := &docSource{name: name, cr: cr, dec: dec, sqs: f == SQS}
	if d.sqs {
		d.parse = sqsRecord(name, opts)
	} else {
		d.parse = cloudRecord(name, opts)
	}
	return d
}

func (d *docSource) fail(err error) (Event, error) {
	at := consumer.Location{File: d.name, Line: d.cr.lineAt(d.dec.InputOffset())}
	reason := "the JSON document is malformed: " + err.Error()
	switch {
	case errors.Is(err, errTooLong):
		reason = fmt.Sprintf("a record is longer than the limit of %d bytes", d.cr.max)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		reason = "the file ends in the middle of a JSON document (truncated?)"
		at.Line = d.cr.lineAt(d.cr.read)
	}
	d.err = &BadRecordError{At: at, Reason: reason, Fatal: true}
	return Event{}, d.err
}

// peek returns the next non-space byte the decoder will read, or 0 at the end.
func (d *docSource) peek() byte {
	if !d.dec.More() {
		// More is false at the end of the input and before a closing delimiter.
		b, _ := io.ReadAll(io.LimitReader(d.dec.Buffered(), 1<<10))
		b = bytes.TrimLeft(b, " \t\r\n")
		if len(b) > 0 {
			return b[0]
		}
		return 0
	}
	b, _ := io.ReadAll(io.LimitReader(d.dec.Buffered(), 1<<10))
	b = bytes.TrimLeft(b, " \t\r\n,:")
	if len(b) > 0 {
		return b[0]
	}
	return '?'
}

func (d *docSource) next() (Event, error) {
	if d.err != nil {
		return Event{}, d.err
	}
	for {
		top := byte(0)
		if len(d.stack) > 0 {
			top = d.stack[len(d.stack)-1]
		}
		switch top {
		case 0:
			if !d.dec.More() {
				if _, err := d.dec.Token(); err != io.EOF {
					if err == nil {
						err = errors.New("unexpected closing delimiter")
					}
					return d.fail(err)
				}
				d.err = io.EOF
				return Event{}, io.EOF
			}
			switch d.peek() {
			case '[':
				if _, err := d.dec.Token(); err != nil {
					return d.fail(err)
				}
				d.stack = append(d.stack, '[')
			case '{':
				if d.sqs {
					if _, err := d.dec.Token(); err != nil {
						return d.fail(err)
					}
					d.stack = append(d.stack, '{')
					continue
				}
				return d.element()
			default:
				return d.fail(errors.New("expected a JSON object or array"))
			}
		case '[':
			if d.dec.More() {
				return d.element()
			}
			if _, err := d.dec.Token(); err != nil {
				return d.fail(err)
			}
			d.stack = d.stack[:len(d.stack)-1]
		case '{':
			if !d.dec.More() {
				if _, err := d.dec.Token(); err != nil {
					return d.fail(err)
				}
				d.stack = d.stack[:len(d.stack)-1]
				continue
			}
			tok, err := d.dec.Token()
			if err != nil {
				return d.fail(err)
			}
			if k, _ := tok.(string); (k == "Messages" || k == "Records") && d.peek() == '[' {
				if _, err := d.dec.Token(); err != nil {
					return d.fail(err)
				}
				d.stack = append(d.stack, '[')
				continue
			}
			var skip json.RawMessage
			if err := d.dec.Decode(&skip); err != nil {
				return d.fail(err)
			}
		}
	}
}

// element decodes one event of the current array (or a lone top-level event).
func (d *docSource) element() (Event, error) {
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		return d.fail(err)
	}
	end := d.dec.InputOffset()
	at := consumer.Location{File: d.name, Line: d.cr.lineAt(end - int64(len(raw)))}
	switch {
	case !utf8.Valid(raw):
		return Event{}, &BadRecordError{At: at, Reason: "record is not valid UTF-8"}
	case len(raw) == 0 || raw[0] != '{':
		return Event{}, &BadRecordError{At: at, Reason: "record is not a JSON object"}
	}
	ev, why := d.parse(raw, at)
	if why != "" {
		return Event{}, &BadRecordError{At: at, Reason: why}
	}
	ev.At = at
	return ev, nil
}

// lineCounter passes the input to the decoder, remembering where its lines
// start (only ahead of the last position asked about, so memory stays
// bounded), and refuses to let one value grow past max bytes.
type lineCounter struct {
	r    io.Reader
	dec  *json.Decoder
	max  int64
	read int64
	nl   []int64 // offsets of newlines not yet passed
	line int     // newlines before the last position asked about
}

func (c *lineCounter) Read(p []byte) (int, error) {
	if c.dec != nil && c.read-c.dec.InputOffset() > c.max+64<<10 {
		return 0, errTooLong
	}
	n, err := c.r.Read(p)
	for i := 0; i < n; i++ {
		if p[i] == '\n' {
			c.nl = append(c.nl, c.read+int64(i))
		}
	}
	c.read += int64(n)
	return n, err
}

// lineAt returns the 1-based line of offset off; offsets asked about never go back.
func (c *lineCounter) lineAt(off int64) int {
	i := 0
	for i < len(c.nl) && c.nl[i] < off {
		i++
	}
	c.line += i
	c.nl = append(c.nl[:0], c.nl[i:]...)
	return c.line + 1
}
