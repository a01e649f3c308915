// Package capture reads captured event logs — CloudEvents, kcat -J,
// SQS/Lambda, NATS dumps and plain NDJSON — as a stream of deliveries, one
// record at a time, so that memory does not grow with the length of the log.
// Every event keeps the file and line it came from.
//
// It owns the capture formats and the registry of the sources read from a
// URL (RegisterSource, by scheme, filled in by the broker adapters). Of
// this module it imports only pkg/consumer and pkg/handler, and it links no
// database driver or broker client.
package capture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
)

// Format is a kind of captured log.
type Format string

// The formats redeliver reads.
const (
	Auto        Format = "auto"
	CloudEvents Format = "cloudevents" // one event, NDJSON, or a batch array
	Kcat        Format = "kcat"        // kcat -J lines
	SQS         Format = "sqs"         // SQS ReceiveMessage or Lambda Records JSON
	NATS        Format = "nats"        // nats sub --dump - (NUL-separated JSON)
	NDJSON      Format = "ndjson"      // plain NDJSON with --id/--key/--payload paths
)

// Formats lists the formats --input accepts.
var Formats = []Format{Auto, CloudEvents, Kcat, SQS, NATS, NDJSON}

// DefaultMaxRecord bounds one line or one record: a longer one is bad input,
// not a reason to grow memory.
const DefaultMaxRecord = 1 << 20

// Options choose how a capture is read.
type Options struct {
	Format Format
	// ID, Key and Payload are gjson paths. For plain NDJSON they are read in
	// the line itself; for the other formats in the envelope redeliver builds
	// (id, source, subject, headers, data and the format's own fields).
	ID, Key, Payload string
	// MaxRecord is the longest line or record accepted, in bytes.
	MaxRecord int
}

// Event is one delivery found in a capture.
type Event struct {
	// ID is the event id the handler dedups on.
	ID string
	// Source is the CloudEvents source, where there is one.
	Source string
	// Key is the business key the capture gives, if any.
	Key string
	// Envelope is the event as one JSON object with the payload in "data".
	Envelope []byte
	// Data, when not empty, is the raw JSON of the envelope's "data",
	// read already with the record (a CloudEvent in structured mode).
	Data string
	// Redelivered is set when the capture itself marks the record as a
	// broker redelivery (a receive count or a delivered count above one).
	Redelivered bool
	At          consumer.Location
}

// BadRecordError is a record that cannot be read. The reader can go on past
// it unless Fatal is set (the rest of the file cannot be found).
type BadRecordError struct {
	At     consumer.Location
	Reason string
	Fatal  bool
}

func (e *BadRecordError) Error() string { return e.At.String() + ": " + e.Reason }

// UnknownFormatError says auto-detection could not tell the format.
type UnknownFormatError struct{ File, Why string }

func (e *UnknownFormatError) Error() string { return e.File + ": " + e.Sentence() }

// Sentence says what went wrong and what to do, without the file.
func (e *UnknownFormatError) Sentence() string {
	return fmt.Sprintf("cannot tell the capture format (%s); name it with --input %s", e.Why, formatWords())
}

func formatWords() string {
	var s []string
	for _, f := range Formats[1:] {
		s = append(s, string(f))
	}
	return strings.Join(s, "|")
}

// ParseFormat reads an --input value.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown --input %q; expected one of %s", s, strings.Join(append([]string{"auto"}, formatWords()), ", "))
}

// Reader reads the events of one capture, in order.
type Reader struct {
	name   string
	format Format
	next   func() (Event, error)
	closer io.Closer
}

// Open starts reading the capture r, named name in reports. Gzip input is
// recognised by its magic bytes; the format is detected unless opts names it.
func Open(name string, r io.Reader, opts Options) (*Reader, error) {
	if opts.MaxRecord <= 0 {
		opts.MaxRecord = DefaultMaxRecord
	}
	if opts.Format == "" {
		opts.Format = Auto
	}
	br := bufio.NewReaderSize(r, 64<<10)
	rd := &Reader{name: name}
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, &BadRecordError{At: consumer.Location{File: name, Line: 1}, Reason: "the gzip header is damaged (" + err.Error() + ")", Fatal: true}
		}
		rd.closer = gz
		br = bufio.NewReaderSize(gz, 64<<10)
	}
	// A byte order mark (what Windows tools write before UTF-8 text) is
	// not part of the first record.
	if mark, _ := br.Peek(len(bom)); bytes.Equal(mark, bom) {
		br.Discard(len(bom))
	}
	f := opts.Format
	if f == Auto {
		var err error
		if f, err = detect(name, br, opts); err != nil {
			return nil, err
		}
	}
	rd.format = f
	switch f {
	case NATS:
		rd.next = newLineSource(name, br, 0, opts.MaxRecord, true, natsRecord(name, opts)).next
	case Kcat:
		rd.next = newLineSource(name, br, '\n', opts.MaxRecord, false, kcatRecord(name, opts)).next
	case NDJSON:
		if opts.ID == "" {
			return nil, errors.New("plain NDJSON needs --id, the path of the event id in each line (e.g. --id eventId)")
		}
		rd.next = newLineSource(name, br, '\n', opts.MaxRecord, false, plainRecord(name, opts)).next
	case CloudEvents:
		if lineShaped(br) {
			rd.next = newLineSource(name, br, '\n', opts.MaxRecord, false, cloudRecord(name, opts)).next
		} else {
			rd.next = newDocSource(name, br, opts, f).next
		}
	case SQS:
		rd.next = newDocSource(name, br, opts, f).next
	default:
		return nil, fmt.Errorf("unknown --input %q", f)
	}
	return rd, nil
}

// bom is UTF-8's byte order mark.
var bom = []byte("\ufeff")

// Format returns the format being read.
func (r *Reader) Format() Format { return r.format }

// Next returns the next event, io.EOF at the end, or a *BadRecordError for
// a record that cannot be read (call Next again to go on, unless Fatal).
func (r *Reader) Next() (Event, error) {
	ev, err := r.next()
	if err == nil && len(ev.ID) > consumer.MaxIDBytes {
		return Event{}, &BadRecordError{At: ev.At, Reason: fmt.Sprintf("the event id is %d bytes long; ids are limited to %d bytes on every store", len(ev.ID), consumer.MaxIDBytes)}
	}
	return ev, err
}

// Close releases the decompressor, if any, and what OnClose was given;
// it does not close the input.
func (r *Reader) Close() error {
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}

// OnClose makes Close close c as well (the source of OpenRecords).
func (r *Reader) OnClose(c io.Closer) { r.closer = c }

// lineShaped reports whether the first JSON value ends on its first line
// (NDJSON) rather than spanning lines or being an array (one document).
func lineShaped(br *bufio.Reader) bool {
	head, _ := br.Peek(64 << 10)
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	nl := bytes.IndexByte(head, '\n')
	if nl < 0 {
		nl = len(head)
	}
	line := bytes.TrimSpace(head[:nl])
	return validJSON(line) && !isDocumentWrapper(line)
}

// detect tells the format of a capture from its first 64 KiB.
func detect(name string, br *bufio.Reader, opts Options) (Format, error) {
	head, err := br.Peek(64 << 10)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		if damaged(err) {
			// Within the first 64 KiB: the line is where the data ends.
			line := 1 + bytes.Count(head, []byte{'\n'})
			return "", &BadRecordError{At: consumer.Location{File: name, Line: line}, Reason: "the compressed data is damaged or cut off here (" + err.Error() + "): the rest of the file cannot be read", Fatal: true}
		}
		return "", err
	}
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 {
		return CloudEvents, nil // empty: nothing to replay, any reader says so
	}
	switch head[0] {
	case '[':
		return CloudEvents, nil
	case '{':
	default:
		return "", &UnknownFormatError{File: name, Why: "it does not start with a JSON object or array"}
	}
	end := len(head)
	nul := bytes.IndexByte(head, 0)
	nl := bytes.IndexByte(head, '\n')
	if nul >= 0 && (nl < 0 || nul < nl) {
		return NATS, nil
	}
	if nl >= 0 {
		end = nl
	}
	first := bytes.TrimSpace(head[:end])
	if !validJSON(first) {
		// A value over several lines: one pretty-printed document.
		return detectDocument(name, head, opts)
	}
	return detectLine(name, first, opts)
}

// detectDocument tells the format of a capture whose first value spans
// several lines, from the names its first 64 KiB hold.
func detectDocument(name string, head []byte, opts Options) (Format, error) {
	if bytes.Contains(head, []byte(`"Messages"`)) || bytes.Contains(head, []byte(`"Records"`)) {
		return SQS, nil
	}
	if bytes.Contains(head, []byte(`"specversion"`)) {
		return CloudEvents, nil
	}
	if opts.ID != "" {
		return NDJSON, nil
	}
	return "", &UnknownFormatError{File: name, Why: "the first line is not a JSON object of a known format"}
}

// detectLine tells the format of a capture whose first line is the JSON
// object first, from the fields it names.
func detectLine(name string, first []byte, opts Options) (Format, error) {
	switch {
	case isDocumentWrapper(first):
		return SQS, nil
	case has(first, "specversion"):
		return CloudEvents, nil
	case has(first, "topic") && has(first, "partition") && has(first, "offset"):
		return Kcat, nil
	case has(first, "Subject") && (has(first, "Data") || has(first, "Header")):
		return NATS, nil
	case opts.ID != "":
		return NDJSON, nil
	}
	return "", &UnknownFormatError{File: name, Why: "the first line is no CloudEvent, kcat -J, SQS or NATS record, and no --id path was given for plain NDJSON"}
}

// OpenRecords reads a capture that arrives one record at a time rather
// than as a file — a JetStream stream or a Kafka topic read back — in
// format f: NATS (each record a message as `nats sub --dump` writes it) or
// Kcat (a record as kcat -J writes it). next returns a record and its
// position in the source (the stream sequence, or the record's place in
// the read, which reports show where a file has its line), or io.EOF at
// the end.
func OpenRecords(name string, f Format, opts Options, next func() ([]byte, int, error)) (*Reader, error) {
	var parse recordParser
	switch f {
	case NATS:
		parse = natsRecord(name, opts)
	case Kcat:
		parse = kcatRecord(name, opts)
	default:
		return nil, fmt.Errorf("a record source reads NATS messages or Kafka records, not %s", f)
	}
	rd := &Reader{name: name, format: f}
	rd.next = func() (Event, error) {
		rec, pos, err := next()
		if err != nil {
			return Event{}, err
		}
		at := consumer.Location{File: name, Line: pos}
		ev, why := parse(rec, at)
		if why != "" {
			return Event{}, &BadRecordError{At: at, Reason: why}
		}
		ev.At = at
		return ev, nil
	}
	return rd, nil
}
