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
	// The SQS/Lambda object open at the top level: its line, whether it
	// gave an array of messages, whether it names a message's own fields
	// instead (a message saved on its own, which has no wrapper), and
	// whether it names anything but ResponseMetadata (an empty response
	// names nothing else).
	wrapLine                   int
	wrapArray, wrapIs, wrapAny bool
	err                        error
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

// peek returns the first byte of the next value. Call it only after More
// said there is one at the top level: More leaves that byte first in the
// decoder's buffer. Anywhere else the buffer may end before the value
// does (right after a key's colon, say), so a look into it proves nothing.
func (d *docSource) peek() byte {
	var b [1]byte
	if n, _ := d.dec.Buffered().Read(b[:]); n == 1 {
		return b[0]
	}
	return 0
}

// next returns the next event of the documents, or io.EOF after the last,
// walking into and out of arrays and SQS/Lambda wrappers on the way.
func (d *docSource) next() (Event, error) {
	if d.err != nil {
		return Event{}, d.err
	}
	for {
		var (
			ev   Event
			err  error
			done bool
		)
		switch d.top() {
		case 0:
			ev, done, err = d.nextAtTop()
		case '[':
			ev, done, err = d.nextInArray()
		case '{':
			ev, done, err = d.nextInWrapper()
		}
		if done {
			return ev, err
		}
	}
}

// top is the container open innermost, or 0 at the top level.
func (d *docSource) top() byte {
	if len(d.stack) > 0 {
		return d.stack[len(d.stack)-1]
	}
	return 0
}

// handBack marks what a step of next hands back to its caller: an event, or
// the error that ends the read or skips a record. A step that only opens
// or closes a container returns false instead, and next goes on.
func handBack(ev Event, err error) (Event, bool, error) { return ev, true, err }

// nextAtTop is a step of next at the top level: the end of the input, an
// array of events or an SQS/Lambda wrapper to open, or a lone event.
func (d *docSource) nextAtTop() (Event, bool, error) {
	if !d.dec.More() {
		if _, err := d.dec.Token(); err != io.EOF {
			if err == nil {
				err = errors.New("unexpected closing delimiter")
			}
			return handBack(d.fail(err))
		}
		d.err = io.EOF
		return handBack(Event{}, io.EOF)
	}
	switch d.peek() {
	case '[':
		if _, err := d.dec.Token(); err != nil {
			return handBack(d.fail(err))
		}
		d.stack = append(d.stack, '[')
	case '{':
		if d.sqs {
			if _, err := d.dec.Token(); err != nil {
				return handBack(d.fail(err))
			}
			d.stack = append(d.stack, '{')
			d.wrapLine, d.wrapArray, d.wrapIs, d.wrapAny = d.cr.lineAt(d.dec.InputOffset()-1), false, false, false
			return Event{}, false, nil
		}
		return handBack(d.element())
	default:
		return handBack(d.fail(errors.New("expected a JSON object or array")))
	}
	return Event{}, false, nil
}

// nextInArray is a step of next inside an array: its next event, or its end.
func (d *docSource) nextInArray() (Event, bool, error) {
	if d.dec.More() {
		return handBack(d.element())
	}
	if _, err := d.dec.Token(); err != nil {
		return handBack(d.fail(err))
	}
	d.stack = d.stack[:len(d.stack)-1]
	return Event{}, false, nil
}

// nextInWrapper is a step of next inside an SQS/Lambda wrapper: its end, the
// array of messages to open, or another field, noted and passed over.
func (d *docSource) nextInWrapper() (Event, bool, error) {
	if !d.dec.More() {
		return d.closeWrapper()
	}
	tok, err := d.dec.Token()
	if err != nil {
		return handBack(d.fail(err))
	}
	if k, _ := tok.(string); k == "Messages" || k == "Records" {
		return d.openMessages(k)
	}
	switch tok {
	case "MessageId", "messageId", "Sns":
		d.wrapIs = true
	case "ResponseMetadata":
	default:
		d.wrapAny = true
	}
	if _, err := d.decode(); err != nil {
		return handBack(d.failValue(err))
	}
	return Event{}, false, nil
}

// closeWrapper reads the end of an SQS/Lambda wrapper and refuses one that
// gave no array of messages but named something else.
func (d *docSource) closeWrapper() (Event, bool, error) {
	if _, err := d.dec.Token(); err != nil {
		return handBack(d.fail(err))
	}
	d.stack = d.stack[:len(d.stack)-1]
	switch {
	case d.wrapArray:
	case d.wrapIs:
		return handBack(Event{}, &BadRecordError{At: consumer.Location{File: d.name, Line: d.wrapLine}, Reason: "an SQS message on its own: an SQS capture holds ReceiveMessage responses (their \"Messages\") or Lambda events (their \"Records\")"})
	case d.wrapAny:
		return handBack(Event{}, &BadRecordError{At: consumer.Location{File: d.name, Line: d.wrapLine}, Reason: "the object is neither a ReceiveMessage response (\"Messages\") nor a Lambda event (\"Records\")"})
	}
	return Event{}, false, nil
}

// openMessages reads the value of a wrapper's field k ("Messages" or
// "Records"): an array of messages is opened, anything else is refused.
func (d *docSource) openMessages(k string) (Event, bool, error) {
	// The value's first token tells whether it holds the
	// messages: the decoder reads it in whatever it has to.
	tok, err := d.dec.Token()
	if err != nil {
		return handBack(d.fail(err))
	}
	d.wrapArray = true
	if tok == json.Delim('[') {
		d.stack = append(d.stack, '[')
		return Event{}, false, nil
	}
	at := consumer.Location{File: d.name, Line: d.cr.lineAt(d.dec.InputOffset())}
	if err := d.skipRest(tok); err != nil {
		return handBack(d.fail(err))
	}
	return handBack(Event{}, &BadRecordError{At: at, Reason: fmt.Sprintf("%q holds no array of messages", k)})
}

// element decodes one event of the current array (or a lone top-level event).
func (d *docSource) element() (Event, error) {
	raw, err := d.decode()
	if err != nil {
		return d.failValue(err)
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

// decode reads the next value whole. One longer than the limit is refused
// the same way whether lineCounter stopped it part-way or it came in reads
// large enough to slip past that guard, so where the reads end never
// decides whether a record is read.
func (d *docSource) decode() (json.RawMessage, error) {
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		return nil, err
	}
	if int64(len(raw)) > d.cr.max {
		return nil, &tooLongError{start: d.dec.InputOffset() - int64(len(raw))}
	}
	return raw, nil
}

// tooLongError is a value decoded whole and found longer than the limit.
type tooLongError struct{ start int64 }

func (e *tooLongError) Error() string { return errTooLong.Error() }
func (e *tooLongError) Unwrap() error { return errTooLong }

// failValue is fail for an error of decode: a value too long for the limit
// is placed at its first byte, which is where a reader of the file looks
// for it, wherever the reads stopped.
func (d *docSource) failValue(err error) (Event, error) {
	if !errors.Is(err, errTooLong) {
		return d.fail(err)
	}
	var start int64
	if tl, ok := err.(*tooLongError); ok {
		start = tl.start
	} else {
		// Stopped part-way: the value starts at the first byte after the
		// blanks the decoder holds from where it began.
		start = d.dec.InputOffset()
		b, _ := io.ReadAll(d.dec.Buffered())
		start += int64(len(b) - len(bytes.TrimLeft(b, " \t\r\n,")))
	}
	d.err = &BadRecordError{At: consumer.Location{File: d.name, Line: d.cr.lineAt(start)}, Reason: fmt.Sprintf("a record is longer than the limit of %d bytes", d.cr.max), Fatal: true}
	return Event{}, d.err
}

// skipRest reads past the rest of a value whose first token was tok.
func (d *docSource) skipRest(tok json.Token) error {
	depth := 0
	for {
		if delim, ok := tok.(json.Delim); ok {
			switch delim {
			case '[', '{':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
		var err error
		if tok, err = d.dec.Token(); err != nil {
			return err
		}
	}
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
