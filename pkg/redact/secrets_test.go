package redact

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

func TestFound(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"URL password", "postgres://app:s3cret@db/app", []string{"s3cret"}},
		{"URL password, encoded", "postgres://app:p%40ss@db/app", []string{"p%40ss"}},
		{"NATS token", "nats://t0ken@h:4222", []string{"t0ken"}},
		{"query", "http://h/x?a=1&token=t0k&b=2", []string{"t0k"}},
		{"keyword DSN, quoted", "host=db password='s 3\\'x' dbname=app", []string{"s 3'x"}},
		{"MySQL DSN", "root:s3cret@tcp(db:3306)/app", []string{"s3cret"}},
		{"flag", "consumer --db-password s3cret --listen :1", []string{"s3cret"}},
		{"bearer", "Authorization: Bearer eyJ.a.b", []string{"eyJ.a.b"}},
		{"a password that is its user's name", "amqp://guest:guest@h/ postgres://postgres:postgres@h/db root:root@tcp(h)/d", nil},
		{"nothing", "http://h/x postgres://app@db/app", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Found(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("Found(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSecretsString(t *testing.T) {
	s := &Secrets{}
	s.Add("hunter2", `p"a<s>s&w'o+r\d`, "two words", "p%40ss", "abc", "", Mask)
	tests := []struct{ name, in, want string }{
		{"alone", "login failed with password hunter2", "login failed with password xxxxx"},
		{"inside a word", "pw=hunter2; x", "pw=xxxxx; x"},
		{"twice", "hunter2 and hunter2", "xxxxx and xxxxx"},
		{"as it is", `p"a<s>s&w'o+r\d`, Mask},
		{"JSON", `"p\"a\u003cs\u003es\u0026w'o+r\\d"`, `"xxxxx"`},
		{"JSON without HTML escapes", `"p\"a<s>s&w'o+r\\d"`, `"xxxxx"`},
		{"XML attribute", `m="p&#34;a&lt;s&gt;s&amp;w&#39;o+r\d"`, `m="xxxxx"`},
		{"HTML", `<td>p&quot;a&lt;s&gt;s&amp;w&#39;o&#43;r\d</td>`, `<td>xxxxx</td>`},
		{"YAML single-quoted", `m: 'p"a<s>s&w''o+r\d'`, `m: 'xxxxx'`},
		{"Go-quoted", `"p\"a<s>s&w'o+r\\d"`, `"xxxxx"`},
		{"a URL", `?q=p%22a%3Cs%3Es%26w%27o%2Br%5Cd`, `?q=xxxxx`},
		{"a space as +", "q=two+words", "q=xxxxx"},
		{"a space folded", "two\n    words", "xxxxx"},
		{"decoded from a URL", "login p@ss", "login xxxxx"},
		{"too short to find alone", "abc abcd", "abc abcd"},
		{"by form still", "postgres://u:abc@h/db", "postgres://u:xxxxx@h/db"},
		{"not another case", "HUNTER2", "HUNTER2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	var nilSecrets *Secrets
	if got := nilSecrets.String("hunter2 postgres://u:pw@h/"); got != "hunter2 postgres://u:xxxxx@h/" {
		t.Errorf("a nil Secrets masks by form only: got %q", got)
	}
	var buf bytes.Buffer
	fmt.Fprintf(s.Writer(&buf), "warning: %s\n", "hunter2")
	if got := buf.String(); got != "warning: xxxxx\n" {
		t.Errorf("Writer wrote %q", got)
	}
}

func TestSecretsAddFound(t *testing.T) {
	s := &Secrets{}
	s.AddFound("postgres://app:s3cretPW@db/app --token t0k3nX")
	if got, want := s.String("echo s3cretPW t0k3nX"), "echo xxxxx xxxxx"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
