package standin

import (
	"net/smtp"
	"slices"
	"testing"

	"github.com/redeliver/redeliver/pkg/template"
)

func TestSMTP(t *testing.T) {
	s, err := StartSMTP("mail", template.MustParse("{to}|{subject}"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		name     string
		delivery string
		from     string
		to       []string
		msg      string
		subject  string
		text     string
		id       string
	}{
		{
			name: "plain", delivery: "d1",
			from: "shop@example.com", to: []string{"ann@example.com"},
			msg:     "From: Shop <shop@example.com>\r\nTo: ann@example.com\r\nSubject: Your order o1\r\nMessage-Id: <m1@shop>\r\n\r\nThanks for order o1.\r\n. a line that starts with a dot\r\n",
			subject: "Your order o1", text: "Thanks for order o1.\r\n. a line that starts with a dot\r\n", id: "<m1@shop>",
		},
		{
			name: "encoded subject, two recipients, base64 body", delivery: "d2",
			from: "shop@example.com", to: []string{"bob@example.com", "eve@example.com"},
			msg:     "From: shop@example.com\r\nSubject: =?UTF-8?B?QmVzdGVsbHVuZyDDvGJlciAxMCDigqw=?=\r\nMessage-Id: <m2@shop>\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\naGFsbG8g\r\nd2VsdA==\r\n",
			subject: "Bestellung über 10 €", text: "hallo welt", id: "<m2@shop>",
		},
		{
			name: "multipart, quoted-printable subject", delivery: "",
			from: "", to: []string{"cat@example.com"},
			msg:     "Subject: =?iso-8859-1?Q?Gr=FC=DFe?=\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nhi =C3=A4\r\n--XX\r\nContent-Type: text/html\r\n\r\n<p>hi</p>\r\n--XX--\r\n",
			subject: "Grüße", text: "hi ä",
		},
	}
	for _, tt := range tests {
		s.SetDelivery(tt.delivery)
		if err := smtp.SendMail(s.Addr(), nil, tt.from, tt.to, []byte(tt.msg)); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
	}
	calls := s.Calls()
	if len(calls) != len(tests) {
		t.Fatalf("got %d calls, want %d", len(calls), len(tests))
	}
	for i, tt := range tests {
		c := calls[i]
		wantKey := tt.to[0]
		for _, r := range tt.to[1:] {
			wantKey += "," + r
		}
		wantKey += "|" + tt.subject
		if c.External != "mail" || c.Seq != i+1 || c.Method != "SMTP" || c.Path != "" || !c.Performed || c.Status != 250 ||
			c.Delivery != tt.delivery || c.From != tt.from || !slices.Equal(c.To, tt.to) || c.Subject != tt.subject || c.Key != wantKey {
			t.Errorf("%s: got %+v", tt.name, c)
		}
		_, _, env := mailEnvelope(c.From, c.To, c.Body)
		if got := expandKey(template.MustParse("{body}"), env); got != tt.text {
			t.Errorf("%s: text body %q, want %q", tt.name, got, tt.text)
		}
		if tt.id != "" && (len(c.Header["Message-Id"]) != 1 || c.Header["Message-Id"][0] != tt.id) {
			t.Errorf("%s: headers %v", tt.name, c.Header)
		}
	}
	s.Reset()
	if n := len(s.Calls()); n != 0 {
		t.Fatalf("%d calls after Reset", n)
	}
	if err := smtp.SendMail(s.Addr(), nil, "a@x", []string{"b@y"}, []byte("Subject: again\r\n\r\nx\r\n")); err != nil {
		t.Fatal(err)
	}
	if c := s.Calls(); len(c) != 1 || c[0].Seq != 1 || c[0].Key != "b@y|again" {
		t.Errorf("after Reset: %+v", c)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := smtp.SendMail(s.Addr(), nil, "a@x", []string{"b@y"}, []byte("Subject: late\r\n\r\nx\r\n")); err == nil {
		t.Error("the stand-in still accepts mail after Close")
	}
}
