package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/smtp"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
)

// provider is a payment provider called over HTTP (--provider): POST
// /v1/charges with a JSON body and, from the safe consumer, an
// Idempotency-Key stable across redeliveries of one order, as Stripe and
// the IETF Idempotency-Key draft want. Its answer {"id": "ch_N"} names the
// charge.
type provider struct {
	url    string
	client *http.Client
}

// chargeOver charges an order at the provider under key ("": no
// Idempotency-Key header). A 409 (the same key still in flight) and a
// 5xx are errors the delivery answers 500 for, to be retried; a 422
// (the key used for another order) is a conflict.
func (p *provider) chargeOver(ctx context.Context, key string, ev event) (int64, error) {
	body, _ := json.Marshal(map[string]string{"orderId": ev.orderID, "amount": ev.amount})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(p.url, "/")+"/v1/charges", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("provider: charge %s: %w", ev.orderID, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	switch {
	case resp.StatusCode == http.StatusUnprocessableEntity:
		return 0, fmt.Errorf("provider: idempotency key %s was used for another request: %w", key, errConflict)
	case resp.StatusCode >= 300:
		return 0, fmt.Errorf("provider: charge %s: %s", ev.orderID, resp.Status)
	}
	var charge struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(answer, &charge); err != nil {
		return 0, fmt.Errorf("provider: charge %s: the answer is not JSON: %w", ev.orderID, err)
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(charge.ID, "ch_"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("provider: charge %s: the charge id %q is not ch_N", ev.orderID, charge.ID)
	}
	return n, nil
}

// randomKey is the random-key flaw's idempotency key: new on every
// attempt, so the provider takes each retry for a new charge.
func randomKey() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// mailer sends the order's confirmation over SMTP (--smtp).
type mailer struct{ addr string }

// confirm mails "Order O-1 paid" to the order's customer.
func (m *mailer) confirm(ev event) error {
	to := "customer-" + ev.orderID + "@example.com"
	msg := fmt.Sprintf("From: payments@example.com\r\nTo: %s\r\nSubject: Order %s paid\r\nDate: %s\r\nMessage-ID: <%s@payments.example.com>\r\n\r\nWe received %s for order %s.\r\n",
		to, ev.orderID, time.Now().UTC().Format(time.RFC1123Z), ev.id, ev.amount, ev.orderID)
	if err := smtp.SendMail(m.addr, nil, "payments@example.com", []string{to}, []byte(msg)); err != nil {
		return fmt.Errorf("mail the confirmation of %s: %w", ev.orderID, err)
	}
	return nil
}

// publisher publishes order.paid, a structured CloudEvent, to a NATS
// subject (--publish nats://HOST:PORT/SUBJECT) once an order's payment is
// committed — again on every redelivery, under the same id (Nats-Msg-Id
// and the event's id, paid-ORDER): at least once, and a downstream
// dedupes the repeats by their id.
type publisher struct {
	nc      *natsgo.Conn
	subject string
	noID    bool // the publish-without-id flaw: no Nats-Msg-Id, a fresh event id each time
}

func openPublisher(url string, noID bool) (*publisher, error) {
	u, err := neturl.Parse(url)
	if err != nil || u.Scheme != "nats" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return nil, fmt.Errorf("--publish %q is not nats://HOST:PORT/SUBJECT", url)
	}
	nc, err := natsgo.Connect("nats://"+u.Host, natsgo.Name("example-consumer-publisher"), natsgo.Timeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("--publish: %w", err)
	}
	return &publisher{nc: nc, subject: strings.Trim(u.Path, "/"), noID: noID}, nil
}

// paid publishes order.paid for ev and waits until the server has it.
func (p *publisher) paid(ev event) error {
	id := "paid-" + ev.orderID
	if p.noID {
		id = randomKey()
	}
	body, _ := json.Marshal(map[string]any{"specversion": "1.0", "id": id, "source": "/payments", "type": "order.paid",
		"datacontenttype": "application/json", "data": map[string]string{"orderId": ev.orderID, "amount": ev.amount}})
	msg := natsgo.NewMsg(p.subject)
	msg.Data = body
	msg.Header.Set("Content-Type", "application/cloudevents+json")
	if !p.noID {
		msg.Header.Set(natsgo.MsgIdHdr, id)
	}
	if err := p.nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("publish order.paid for %s: %w", ev.orderID, err)
	}
	return p.nc.Flush()
}

// errNoMailer is a mail-before-commit consumer started without --smtp.
var errNoMailer = errors.New("mail-before-commit needs --smtp")
