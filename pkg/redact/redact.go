// Package redact hides the secrets a user's configuration carries —
// passwords in database and broker URLs and DSNs, tokens in query strings
// and command-line flags — from every string redeliver prints. What is
// used to connect is never touched: only what is shown passes through
// here.
//
// String recognises a secret by its form, wherever it stands in a text:
//
//	postgres://postgres:s3cret@db/app       postgres://postgres:xxxxx@db/app
//	https://api/x?sslmode=require&token=t   https://api/x?sslmode=require&token=xxxxx
//	host=db user=app password='s 3'         host=db user=app password=xxxxx
//	root:s3cret@tcp(127.0.0.1:3306)/app     root:xxxxx@tcp(127.0.0.1:3306)/app
//	nats://t0ken@127.0.0.1:4222             nats://xxxxx@127.0.0.1:4222
//	--password s3cret, --api-key=s3cret     --password xxxxx, --api-key=xxxxx
//	PGPASSWORD=s3cret                       PGPASSWORD=xxxxx
//	Authorization: Bearer t0ken             Authorization: Bearer xxxxx
//
// It errs on the side of hiding: a value that merely looks like a secret
// is masked too.
//
// It imports no other package of this module.
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// Mask is what a secret is replaced with.
const Mask = "xxxxx"

// placeholder is the password of a hint (postgres://USER:PASSWORD@HOST),
// not a secret.
const placeholder = "PASSWORD"

// String returns s with every secret it recognises replaced by Mask.
func String(s string) string { return mask(s, nil) }

// Found returns the secrets String recognises in s: the values it would
// mask, each as s holds it.
func Found(s string) []string {
	var out []string
	mask(s, func(v string) {
		// A later pass reads what an earlier one masked: a piece holding
		// the mask is no value of s.
		if v != "" && !strings.Contains(v, Mask) {
			out = append(out, v)
		}
	})
	return out
}

// mask is String, telling found (when it is not nil) each value it
// masks.
func mask(s string, found func(string)) string {
	if found == nil {
		found = func(string) {}
	}
	auth := authWord(s)
	if !auth && !strings.ContainsAny(s, "@=-") {
		return s
	}
	// A mask can leave a form another rule reads (a URL inside what read
	// as a MySQL DSN): go again until nothing changes, a few times at most.
	for range 4 {
		t := userinfo(s, found)
		t = mysqlDSN(t, found)
		t = assignments(t, found)
		t = flags(t, found)
		if auth {
			t = authorization(t, found)
		}
		if t == s {
			break
		}
		s = t
	}
	return s
}

// Args writes a command line (a program and its arguments) joined by
// spaces, with the value of every argument that is a secret masked: the
// argument after a flag whose name says it holds one (--password, -token,
// --api-key), the value of --name=value and NAME=value when the name says
// so, and whatever String recognises in any argument.
func Args(argv []string) string {
	out := make([]string, len(argv))
	next := false
	for i, a := range argv {
		switch {
		case next:
			out[i] = Mask
			next = false
			continue
		case isFlag(a) && !strings.Contains(a, "="):
			next = SecretName(strings.TrimLeft(a, "-"))
		}
		if name, _, ok := strings.Cut(a, "="); ok && isName(name) && SecretName(strings.TrimLeft(name, "-")) {
			out[i] = name + "=" + Mask
			continue
		}
		out[i] = String(a)
	}
	return strings.Join(out, " ")
}

// Error returns err with its message passed through String, or nil. An
// error of net/url, which quotes the whole URL and sometimes a piece of
// it it could not read (an "invalid port" that is really the end of a
// password), loses those quoted pieces.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		inner := "invalid URL"
		if ue.Err != nil {
			inner = strings.TrimSpace(quoted.ReplaceAllString(ue.Err.Error(), ""))
		}
		msg = strings.ReplaceAll(msg, ue.Error(), ue.Op+" "+URL(cutPort(ue.URL))+": "+inner)
	}
	red := String(msg)
	if red == err.Error() {
		return err
	}
	return &redacted{msg: red, err: err}
}

// cutPort masks what follows the colon of an authority without an @
// when it is not a port: url.Parse cuts a URL at its first #, so the URL
// its error quotes may end inside a password ("postgres://u:pa" of
// "postgres://u:pa#ss@host/db"), which then reads as a port.
func cutPort(s string) string {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	auth := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth = rest[:i]
	}
	if strings.Contains(auth, "@") || strings.HasPrefix(auth, "[") {
		return s
	}
	i := strings.IndexByte(auth, ':')
	if i < 0 || strings.Trim(auth[i+1:], "0123456789") == "" {
		return s
	}
	start := len(s) - len(rest)
	return s[:start+i+1] + Mask + s[start+len(auth):]
}

// URL is a URL (or DSN) as it may be shown: its password masked, and
// quoted as Go quotes a string.
func URL(s string) string { return String(quote(s)) }

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < ' ' || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// quoted is a quoted piece of a URL in an error of net/url.
var quoted = regexp.MustCompile(`\s*"(?:[^"\\]|\\.)*"`)

// redacted is an error whose message was redacted. Unwrap still reaches
// the cause, for errors.Is and errors.As; its message is not shown.
type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// SecretName reports whether a name — of an environment variable, a
// query parameter, a DSN keyword or a flag — says its value is a secret:
// it contains PASSWORD, PASSWD, PASSPHRASE, SECRET, TOKEN or CREDENTIAL,
// it ends in a word PASS, PW or AUTH (pass, DB_PASS, basic-auth), or it
// ends in a word KEY or PWD after another word (API_KEY, STRIPE_KEY,
// MYSQL_PWD; PWD alone is the working directory), except the keys that
// name things (ROUTING_KEY, IDEMPOTENCY_KEY, …). Case and the separators
// _ - . do not matter.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "CREDENTIAL", "APIKEY", "ACCESSKEY", "PRIVATEKEY"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	words := strings.FieldsFunc(n, func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	switch last {
	case "PASS", "PW", "AUTH":
		// --pass, --pw, --auth, BASIC_AUTH: a password or user:password.
		return true
	}
	if len(words) < 2 {
		return false
	}
	switch before := words[len(words)-2]; last {
	case "PWD":
		return true
	case "KEY":
		return !namingKey[before]
	}
	return false
}

// namingKey are the words before KEY in names whose values name a thing
// rather than hide it.
var namingKey = map[string]bool{
	"ROUTING": true, "IDEMPOTENCY": true, "PRIMARY": true, "FOREIGN": true,
	"SORT": true, "PARTITION": true, "DEDUP": true, "MESSAGE": true,
	"BUSINESS": true, "EVENT": true, "ORDER": true, "CACHE": true,
	"GROUP": true, "OBJECT": true, "MAP": true, "PUBLIC": true, "SSL": true,
}

// stop reports whether c ends a token: white space, a double quote or a
// backquote, or the brackets of a markup. (A single quote does not: a URL
// may have one in its password.)
func stop(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f', '"', '`', '<', '>':
		return true
	}
	return false
}

// userinfo masks the password of every scheme://user:password@host in s,
// and the whole user of a NATS URL (nats://TOKEN@host).
func userinfo(s string, found func(string)) string {
	var b strings.Builder
	done := 0
	for i := 0; ; {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			break
		}
		start := i + j + 3
		k := start - 3
		for k > 0 && schemeChar(s[k-1]) {
			k--
		}
		scheme := strings.ToLower(s[k : start-3])
		end := start
		for end < len(s) && !stop(s[end]) {
			if s[end] == '\\' && end+1 < len(s) {
				end++
			}
			end++
		}
		tok := s[start:end]
		i = end
		first := strings.IndexByte(tok, '@')
		if first < 0 {
			continue
		}
		limit := len(tok)
		if l := strings.IndexAny(tok[first:], "/?#"); l >= 0 {
			limit = first + l
		}
		at := strings.LastIndexByte(tok[:limit], '@')
		from := strings.IndexByte(tok[:at], ':') + 1
		if from == 0 {
			if scheme != "nats" && scheme != "tls" {
				continue
			}
		}
		if tok[from:at] == Mask || from == at || tok[from:at] == placeholder {
			continue
		}
		b.WriteString(s[done : start+from])
		b.WriteString(Mask)
		if from == 0 || tok[from:at] != tok[:from-1] {
			// A password that is its user's name (guest:guest) is
			// given away by the name, shown: no secret to find.
			found(tok[from:at])
		}
		done = start + at
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

func schemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// mysqlDSN masks the password of a Go MySQL driver DSN:
// user:password@tcp(host:port)/db, @unix(…), @(…) or @/db. As the driver
// does, the password runs to the token's last @ before an address. (A
// URL whose host is an address of that form is masked the same way.)
func mysqlDSN(s string, found func(string)) string {
	var b strings.Builder
	done := 0
	colon, at := -1, -1 // in the token: the first colon, the last @ before an address
	tok := 0            // where the token starts
	for i := 0; i <= len(s); i++ {
		switch {
		case i == len(s) || stop(s[i]):
			if at >= 0 && s[colon+1:at] != Mask {
				b.WriteString(s[done : colon+1])
				b.WriteString(Mask)
				if s[tok:colon] != s[colon+1:at] { // see userinfo
					found(s[colon+1 : at])
				}
				done = at
			}
			colon, at, tok = -1, -1, i+1
		case s[i] == ':' && colon < 0:
			colon = i
		case s[i] == '@' && colon >= 0 && mysqlAddr(s[i+1:]):
			at = i
		}
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// mysqlAddr reports whether s, after an @, starts the address of a Go
// MySQL DSN.
func mysqlAddr(s string) bool {
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "(") {
		return true
	}
	i := 0
	for i < len(s) && ('a' <= s[i] && s[i] <= 'z' || '0' <= s[i] && s[i] <= '9') {
		i++
	}
	return i > 0 && i < len(s) && s[i] == '('
}

// assignments masks the value of every NAME=value whose name says it is a
// secret: query parameters, DSN keywords, --flag=value, VAR=value.
func assignments(s string, found func(string)) string {
	var b strings.Builder
	done := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			continue
		}
		k := i
		for k > done && nameChar(s[k-1]) {
			k--
		}
		if !SecretName(strings.TrimLeft(s[k:i], "-")) {
			continue
		}
		query := k > 0 && (s[k-1] == '?' || s[k-1] == '&' || s[k-1] == ';')
		end := value(s, i+1, query)
		if masked(s[i+1:end]) || end == i+1 || s[i+1:end] == placeholder {
			continue
		}
		b.WriteString(s[done : i+1])
		b.WriteString(Mask)
		found(unquote(s[i+1 : end]))
		done = end
		i = end - 1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// unquote is a value as a keyword DSN means it: 'quoted', with \'
// and \\ escapes, or as it stands.
func unquote(v string) string {
	if len(v) < 2 || v[0] != '\'' || v[len(v)-1] != '\'' {
		return v
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		if v[i] == '\\' && i+1 < len(v)-1 {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// masked reports whether a value is the mask already, maybe followed by
// the punctuation of the sentence it stands in ("--token xxxxx;").
func masked(v string) bool { return strings.TrimRight(v, ".,;:)]}") == Mask }

func nameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// value finds the end of the value that starts at s[i]: a 'quoted' one
// (which may hold spaces) to its closing quote, then, as any other value,
// up to the end of the token (or of the query parameter). A backslash
// keeps the next byte in the value, so an escaped quote of the text
// around it is not cut in half.
func value(s string, i int, query bool) int {
	j := i
	if j < len(s) && s[j] == '\'' {
		for j++; j < len(s) && s[j] != '\''; j++ {
			if s[j] == '\\' {
				j++
			}
		}
		j++
	}
	for j < len(s) && !stop(s[j]) && !(query && (s[j] == '&' || s[j] == '#')) {
		if s[j] == '\\' {
			j++
		}
		j++
	}
	return min(j, len(s))
}

// flags masks the word after a flag whose name says it is a secret:
// "--password s3cret", "-token s3cret".
func flags(s string, found func(string)) string {
	var b strings.Builder
	done := 0
	for i := 0; i < len(s); i++ {
		v, end, ok := secretFlagValue(s, i)
		if !ok {
			continue
		}
		b.WriteString(s[done:v])
		b.WriteString(Mask)
		found(unquote(s[v:end]))
		done = end
		i = end - 1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// secretFlagValue says whether a flag whose name says it is a secret
// starts at s[i] and where its value stands: s[v:end], the word after it
// on the same line, not a flag and not masked already.
func secretFlagValue(s string, i int) (v, end int, ok bool) {
	k, ok := secretFlag(s, i)
	if !ok {
		return 0, 0, false
	}
	v = k
	for v < len(s) && space(s[v]) && s[v] != '\n' {
		v++
	}
	if v == k || v >= len(s) || s[v] == '-' {
		return 0, 0, false
	}
	end = value(s, v, false)
	if end == v || masked(s[v:end]) {
		return 0, 0, false
	}
	return v, end, true
}

// secretFlag says whether s[i:k] is a flag whose name says it is a
// secret, one or two dashes after a space or a quote, followed by a
// space.
func secretFlag(s string, i int) (k int, ok bool) {
	if s[i] != '-' || (i > 0 && !space(s[i-1]) && s[i-1] != '"' && s[i-1] != '\'') {
		return 0, false
	}
	j := i
	for j < len(s) && s[j] == '-' {
		j++
	}
	if j-i > 2 {
		return 0, false
	}
	k = j
	for k < len(s) && nameChar(s[k]) {
		k++
	}
	if k == j || k >= len(s) || !space(s[k]) || !SecretName(s[j:k]) {
		return 0, false
	}
	return k, true
}

func space(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// authorization masks the credentials of an HTTP Authorization value:
// "Bearer t0ken", "Basic dXNlcjpwdw==".
var authScheme = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]+)`)

// authWord reports whether s has "bearer" or "basic", in any case.
func authWord(s string) bool {
	for i := 0; i+5 <= len(s); i++ {
		if s[i]|0x20 != 'b' {
			continue
		}
		w := s[i+1 : min(i+6, len(s))]
		if len(w) >= 5 && strings.EqualFold(w[:5], "earer") || strings.EqualFold(w[:4], "asic") {
			return true
		}
	}
	return false
}

func authorization(s string, found func(string)) string {
	return authScheme.ReplaceAllStringFunc(s, func(m string) string {
		sub := authScheme.FindStringSubmatch(m)
		if sub[3] == Mask || !credential(sub[3]) {
			return m
		}
		found(sub[3])
		return sub[1] + sub[2] + Mask
	})
}

// credential reports whether the word after Bearer or Basic looks like a
// credential rather than a word of a sentence ("basic auth"): it has a
// digit, or a character of a token, or is long. A word that starts with
// a dash is the command line's next flag ("--auth-mode basic --port").
func credential(w string) bool {
	if strings.HasPrefix(w, "-") {
		return false
	}
	return len(w) >= 16 || strings.ContainsAny(w, "0123456789._~+/=-")
}

// isName reports whether s is made only of the characters of a name
// (and a flag's dashes).
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !nameChar(s[i]) {
			return false
		}
	}
	return s != ""
}

// isFlag reports whether a is a command-line flag: one or two dashes and
// a name.
func isFlag(a string) bool {
	n := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	return len(n) < len(a) && n != "" && nameChar(n[0]) && n[0] != '-'
}
