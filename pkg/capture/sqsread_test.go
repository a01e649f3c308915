package capture

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// sqsLines is a capture of n ReceiveMessage responses, one a line, the
// i-th holding 1+i%3 messages whose ids repeat every 'every' messages,
// and a field of pad bytes before "Messages" on the first line (to move
// where the decoder's reads end).
func sqsLines(n, every, pad int) (string, int) {
	var b strings.Builder
	m := 0
	for i := 0; i < n; i++ {
		b.WriteString(`{`)
		if i == 0 {
			fmt.Fprintf(&b, `"Pad":%q,`, strings.Repeat("p", pad))
		}
		b.WriteString(`"Messages": [`)
		for j := 0; j <= i%3; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			body, _ := json.Marshal(fmt.Sprintf(`{"orderId":"order-%d","amount":%d}`, m%every, m))
			fmt.Fprintf(&b, `{"MessageId": "00000000-0000-4000-8000-%012d", "ReceiptHandle": "AQEB%d==", "Body": %s, "Attributes": {"ApproximateReceiveCount": "1"}}`, m%every, m, body)
			m++
		}
		b.WriteString("]}\n")
	}
	return b.String(), m
}

// TestSQSKeepsEveryMessageAtAnyReadSize: a ReceiveMessage response whose
// "Messages": ends where one read of the file ends gives its messages
// like any other; no read size loses a record.
func TestSQSKeepsEveryMessageAtAnyReadSize(t *testing.T) {
	// The JSON decoder's first read takes 512 bytes: pads up to 600 put
	// the end of that read at every byte of the first "Messages": key.
	for pad := 0; pad <= 600; pad++ {
		in, want := sqsLines(1, 150, pad)
		_, evs, bad, err := readAll(t, "sqs.json", strings.NewReader(in), Options{Format: SQS})
		if err != nil || len(bad) != 0 || len(evs) != want {
			t.Fatalf("pad %d: %d deliveries, bad %v, err %v; want %d deliveries", pad, len(evs), bad, err, want)
		}
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one-byte", iotest.OneByteReader},
		{"half", iotest.HalfReader},
		{"data-err", iotest.DataErrReader},
	}
	for _, rd := range readers {
		in, want := sqsLines(200, 150, 0)
		_, evs, bad, err := readAll(t, "sqs.json", rd.wrap(strings.NewReader(in)), Options{Format: SQS})
		ids := map[string]bool{}
		for _, ev := range evs {
			ids[ev.ID] = true
		}
		if err != nil || len(bad) != 0 || len(evs) != want || len(ids) != 150 {
			t.Errorf("%s reads: %d deliveries, %d distinct ids, bad %v, err %v; want %d deliveries, 150 ids", rd.name, len(evs), len(ids), bad, err, want)
		}
	}
}
