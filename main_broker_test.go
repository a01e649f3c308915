package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/nats"
)

// natsURL is the NATS server the [nats] scripts use.
func natsURL() string {
	if u := os.Getenv("REDELIVER_TEST_NATS"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// natsUp says whether NATS answers; under CI its absence is an error.
func natsUp() (bool, error) {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(natsURL(), "nats://"), 2*time.Second)
	if err != nil {
		if os.Getenv("CI") != "" {
			return false, fmt.Errorf("NATS with JetStream is needed at %s under CI: %v", natsURL(), err)
		}
		return false, nil
	}
	c.Close()
	return true, nil
}

// uniqueStream is a stream name no other script or run uses.
func uniqueStream() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "RDLV_SCRIPT_" + strings.ToUpper(hex.EncodeToString(b))
}

func publishCapture(url, stream, file string) int {
	ctx := context.Background()
	subject, _ := broker.ParseRoute(strings.ToLower(stream) + ".{type}")
	p, err := nats.Open(ctx, nats.Config{URL: url, Stream: stream, Subject: subject, Create: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer p.Close()
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var ev struct {
			ID, Source, Type, Subject, Time string
			Data                            json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// Each line under its own message id: repeats are an outbox
		// publishing again, which the duplicate window does not drop.
		m := broker.Message{ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject, Time: ev.Time, Data: ev.Data, MsgID: fmt.Sprintf("%s#%d", ev.ID, n)}
		if _, err := p.Publish(ctx, m); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println("published", stream)
	return 0
}

func deleteStream(url, stream string) int {
	nc, err := natsgo.Connect(url, natsgo.Timeout(10*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if err := js.DeleteStream(context.Background(), stream); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("deleted", stream)
	return 0
}

var captureName = regexp.MustCompile(`(nats://[^ :]+(:\d+)?/\w+|capture\.ndjson)( \((nats|cloudevents)\))?`)

func stripInputs(in, out string) int {
	data, err := os.ReadFile(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.WriteFile(out, captureName.ReplaceAll(data, []byte("CAPTURE")), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
