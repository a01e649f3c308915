package standin

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/redeliver/redeliver/pkg/template"
)

// SMTP is a stand-in for a mail server: it accepts every message from any
// sender to any recipient, with no authentication and no TLS, and records
// each as a performed Call with Status 250.
type SMTP struct {
	name   string
	key    template.Template
	srv    *smtp.Server
	addr   string
	served chan struct{}

	closeOnce sync.Once
	closeErr  error

	mu       sync.Mutex
	seq      int
	delivery string
	calls    []*Call
}

// StartSMTP starts an SMTP stand-in named name on a free 127.0.0.1 port.
// key is the effect key template, expanded with gjson paths over the mail's
// envelope JSON ({from}, {to}, {subject}, {headers.message-id}, {body}).
func StartSMTP(name string, key template.Template) (*SMTP, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stand-in %s: %w", name, err)
	}
	s := &SMTP{name: name, key: key, addr: ln.Addr().String(), served: make(chan struct{})}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &smtpSession{s: s}, nil
	}))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.MaxMessageBytes = maxBody
	srv.MaxRecipients = 1000
	srv.EnableSMTPUTF8 = true
	srv.ReadTimeout = 5 * time.Minute
	srv.WriteTimeout = 30 * time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)
	s.srv = srv
	go func() {
		defer close(s.served)
		_ = srv.Serve(ln) // an error once closed
	}()
	return s, nil
}

// Addr is the stand-in's address, "127.0.0.1:PORT".
func (s *SMTP) Addr() string { return s.addr }

// Name is the stand-in's name.
func (s *SMTP) Name() string { return s.name }

// Calls returns a copy of the messages accepted since the start or the last
// Reset, in Seq order.
func (s *SMTP) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyCalls(s.calls)
}

// Reset forgets the messages and the numbering.
func (s *SMTP) Reset() {
	s.mu.Lock()
	s.seq = 0
	s.calls = nil
	s.mu.Unlock()
}

// SetDelivery labels the messages that arrive from now on with id ("" none).
func (s *SMTP) SetDelivery(id string) {
	s.mu.Lock()
	s.delivery = id
	s.mu.Unlock()
}

// Close stops the stand-in and ends every connection. It is idempotent.
func (s *SMTP) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.srv.Close()
		<-s.served
	})
	return s.closeErr
}

// smtpSession is one client connection's transaction state.
type smtpSession struct {
	s    *SMTP
	from string
	to   []string
}

func (ss *smtpSession) Reset() {
	ss.from = ""
	ss.to = nil
}

func (ss *smtpSession) Logout() error { return nil }

func (ss *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	ss.from = from
	ss.to = nil
	return nil
}

func (ss *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *smtpSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	c := &Call{
		External:  ss.s.name,
		At:        time.Now(),
		Method:    "SMTP",
		Body:      raw,
		Performed: true,
		Status:    250,
		From:      ss.from,
		To:        append([]string(nil), ss.to...),
	}
	var env []byte
	c.Header, c.Subject, env = mailEnvelope(c.From, c.To, raw)
	c.Key = expandKey(ss.s.key, env)

	s := ss.s
	s.mu.Lock()
	s.seq++
	c.Seq = s.seq
	c.Delivery = s.delivery
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	return nil
}

// mailEnvelope parses a message as received: its headers, its decoded
// Subject and its envelope JSON (see smtpEnvelope). A message net/mail
// cannot parse has no headers and an empty text.
func mailEnvelope(from string, to []string, raw []byte) (header map[string][]string, subject string, env []byte) {
	header = map[string][]string{}
	text := ""
	if msg, err := mail.ReadMessage(bytes.NewReader(raw)); err == nil {
		header = msg.Header
		subject = decodeHeader(msg.Header.Get("Subject"))
		text = textBody(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
	}
	return header, subject, smtpEnvelope(from, to, subject, header, text)
}

// decodeHeader decodes RFC 2047 encoded words (UTF-8, ISO-8859-1,
// US-ASCII); a header it cannot decode is kept as it is.
func decodeHeader(v string) string {
	var dec mime.WordDecoder
	s, err := dec.DecodeHeader(v)
	if err != nil {
		return v
	}
	return s
}

// textBody is the text of a message: its body, or the first text/plain
// part of a multipart one, with its transfer encoding undone.
func textBody(contentType, encoding string, body io.Reader) string {
	mt, params, err := mime.ParseMediaType(contentType)
	if err == nil && strings.HasPrefix(mt, "multipart/") && params["boundary"] != "" {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				return ""
			}
			ct := p.Header.Get("Content-Type")
			pmt, _, perr := mime.ParseMediaType(ct)
			switch {
			case ct == "" || (perr == nil && pmt == "text/plain"):
				// multipart.Part undoes quoted-printable itself.
				return decodeBody(p.Header.Get("Content-Transfer-Encoding"), p)
			case perr == nil && strings.HasPrefix(pmt, "multipart/"):
				if t := textBody(ct, "", p); t != "" {
					return t
				}
			}
		}
	}
	return decodeBody(encoding, body)
}

func decodeBody(encoding string, r io.Reader) string {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r) // line breaks are skipped
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	}
	b, _ := io.ReadAll(io.LimitReader(r, maxBody))
	return string(b)
}
