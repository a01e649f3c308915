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
	"strconv"
	"strings"
	"time"
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

// errNoMailer is a mail-before-commit consumer started without --smtp.
var errNoMailer = errors.New("mail-before-commit needs --smtp")
