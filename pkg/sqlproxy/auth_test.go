package sqlproxy

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// fakeServer is a PostgreSQL server of the test's own that demands one
// authentication method — trust, password, md5 or scram-sha-256 — of its
// one user, then answers "SELECT 1" in the simple protocol.
type fakeServer struct {
	ln             net.Listener
	method         string
	user, password string
	// authenticated counts the connections that proved the password.
	authenticated atomic.Int64
	wg            sync.WaitGroup
}

func startFakeServer(t *testing.T, method, user, password string) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln, method: method, user: user, password: password}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if err := s.serve(c); err != nil {
					t.Logf("fake server: %v", err)
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

// errAuth is a client that did not prove the password.
var errAuth = errors.New("password authentication failed")

func (s *fakeServer) serve(c net.Conn) error {
	be := pgproto3.NewBackend(c, c)
	msg, err := be.ReceiveStartupMessage()
	if err != nil {
		return err
	}
	start, ok := msg.(*pgproto3.StartupMessage)
	if !ok {
		return fmt.Errorf("startup: %T", msg)
	}
	user := start.Parameters["user"]
	err = s.authenticate(be, user)
	if errors.Is(err, errAuth) || err == nil && user != s.user {
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01", Message: fmt.Sprintf("password authentication failed for user %q", user)})
		return be.Flush()
	}
	if err != nil {
		return err
	}
	if s.method != "trust" {
		s.authenticated.Add(1)
	}
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 4242, SecretKey: []byte{1, 2, 3, 4}})
	for _, p := range [][2]string{{"server_version", "17.0"}, {"server_encoding", "UTF8"}, {"client_encoding", "UTF8"}, {"DateStyle", "ISO, MDY"}, {"integer_datetimes", "on"}, {"standard_conforming_strings", "on"}, {"TimeZone", "UTC"}} {
		be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := be.Flush(); err != nil {
		return err
	}
	for {
		msg, err := be.Receive()
		if err != nil {
			return nil // the client left
		}
		switch m := msg.(type) {
		case *pgproto3.Terminate:
			return nil
		case *pgproto3.Query:
			if m.String != "SELECT 1" {
				be.Send(&pgproto3.ErrorResponse{Severity: "ERROR", Code: "0A000", Message: "this server answers SELECT 1 only"})
			} else {
				be.Send(&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("?column?"), DataTypeOID: 23, DataTypeSize: 4, TypeModifier: -1}}})
				be.Send(&pgproto3.DataRow{Values: [][]byte{[]byte("1")}})
				be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")})
			}
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
			if err := be.Flush(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected %T", msg)
		}
	}
}

// authenticate asks for the password by the server's method; errAuth:
// the client's answer did not prove it.
func (s *fakeServer) authenticate(be *pgproto3.Backend, user string) error {
	switch s.method {
	case "trust":
		return nil
	case "password":
		be.Send(&pgproto3.AuthenticationCleartextPassword{})
		pw, err := s.password1(be, pgproto3.AuthTypeCleartextPassword)
		if err != nil {
			return err
		}
		if pw != s.password {
			return errAuth
		}
		return nil
	case "md5":
		var salt [4]byte
		rand.Read(salt[:])
		be.Send(&pgproto3.AuthenticationMD5Password{Salt: salt})
		pw, err := s.password1(be, pgproto3.AuthTypeMD5Password)
		if err != nil {
			return err
		}
		// "md5" + md5(md5(password + user) + salt), in hex.
		inner := md5.Sum([]byte(s.password + user))
		outer := md5.Sum(append([]byte(hex.EncodeToString(inner[:])), salt[:]...))
		if pw != "md5"+hex.EncodeToString(outer[:]) {
			return errAuth
		}
		return nil
	case "scram-sha-256":
		return s.scram(be)
	}
	return fmt.Errorf("unknown method %q", s.method)
}

// password1 reads the client's PasswordMessage.
func (s *fakeServer) password1(be *pgproto3.Backend, authType uint32) (string, error) {
	if err := be.Flush(); err != nil {
		return "", err
	}
	be.SetAuthType(authType)
	msg, err := be.Receive()
	if err != nil {
		return "", err
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		return "", fmt.Errorf("want a PasswordMessage, got %T", msg)
	}
	return pm.Password, nil
}

// scram is SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL speaks it:
// the user name in the client's first message is ignored (the startup
// packet's counts), no channel binding.
func (s *fakeServer) scram(be *pgproto3.Backend) error {
	be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}})
	if err := be.Flush(); err != nil {
		return err
	}
	be.SetAuthType(pgproto3.AuthTypeSASL)
	msg, err := be.Receive()
	if err != nil {
		return err
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || first.AuthMechanism != "SCRAM-SHA-256" {
		return fmt.Errorf("want SASLInitialResponse for SCRAM-SHA-256, got %#v", msg)
	}
	// client-first-message: gs2 header "n,," then "n=user,r=nonce".
	const gs2 = "n,,"
	bare, ok := strings.CutPrefix(string(first.Data), gs2)
	if !ok {
		return fmt.Errorf("client-first-message %q: want the gs2 header %q", first.Data, gs2)
	}
	clientNonce := attr(bare, "r")
	if clientNonce == "" {
		return fmt.Errorf("client-first-message %q has no nonce", bare)
	}
	salt := make([]byte, 16)
	rand.Read(salt)
	serverNonce := make([]byte, 18)
	rand.Read(serverNonce)
	nonce := clientNonce + base64.RawStdEncoding.EncodeToString(serverNonce)
	serverFirst := fmt.Sprintf("r=%s,s=%s,i=4096", nonce, base64.StdEncoding.EncodeToString(salt))
	be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)})
	if err := be.Flush(); err != nil {
		return err
	}
	be.SetAuthType(pgproto3.AuthTypeSASLContinue)
	if msg, err = be.Receive(); err != nil {
		return err
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return fmt.Errorf("want SASLResponse, got %T", msg)
	}
	// client-final-message: "c=biws,r=nonce,p=proof".
	clientFinal := string(final.Data)
	i := strings.LastIndex(clientFinal, ",p=")
	if i < 0 {
		return fmt.Errorf("client-final-message %q has no proof", clientFinal)
	}
	withoutProof := clientFinal[:i]
	if attr(withoutProof, "c") != base64.StdEncoding.EncodeToString([]byte(gs2)) || attr(withoutProof, "r") != nonce {
		return fmt.Errorf("client-final-message %q: wrong channel binding or nonce", clientFinal)
	}
	proof, err := base64.StdEncoding.DecodeString(clientFinal[i+len(",p="):])
	if err != nil || len(proof) != sha256.Size {
		return fmt.Errorf("client proof %q: %v", clientFinal[i+3:], err)
	}
	salted, err := pbkdf2.Key(sha256.New, s.password, salt, 4096, sha256.Size)
	if err != nil {
		return err
	}
	clientKey := hmacSHA256(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	authMessage := bare + "," + serverFirst + "," + withoutProof
	signature := hmacSHA256(storedKey[:], authMessage)
	// The proof is ClientKey XOR ClientSignature: undo it and compare.
	recovered := make([]byte, len(proof))
	for i := range proof {
		recovered[i] = proof[i] ^ signature[i]
	}
	if got := sha256.Sum256(recovered); !hmac.Equal(got[:], storedKey[:]) {
		return errAuth
	}
	serverKey := hmacSHA256(salted, "Server Key")
	be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte("v=" + base64.StdEncoding.EncodeToString(hmacSHA256(serverKey, authMessage)))})
	return nil
}

func hmacSHA256(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// attr is the value of a SCRAM attribute ("r" in "n=,r=abc") or "".
func attr(msg, name string) string {
	for _, kv := range strings.Split(msg, ",") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestAuthenticationPassesThrough: a server that demands a password, by
// each method PostgreSQL has for it, is answered through the proxy as if
// the client were connected to it: the right password connects and the
// connection works; a wrong one gets the server's own refusal (28P01).
// SCRAM also proves the server to the client, so a byte changed in either
// direction fails it.
func TestAuthenticationPassesThrough(t *testing.T) {
	tests := []struct {
		method string
		// refuses: a wrong password is refused (trust takes any).
		refuses bool
	}{
		{"trust", false},
		{"password", true},
		{"md5", true},
		{"scram-sha-256", true},
	}
	const user, password = "alice", "s3cret-Ω"
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			srv := startFakeServer(t, tt.method, user, password)
			p, err := Listen(srv.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			dsn := func(pw string) string {
				u := url.URL{Scheme: "postgres", User: url.UserPassword(user, pw), Host: p.Addr(), Path: "/test", RawQuery: "sslmode=disable"}
				return u.String()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			c, err := pgx.Connect(ctx, dsn(password))
			if err != nil {
				t.Fatalf("the right password through the proxy: %v", err)
			}
			var n int
			if err := c.QueryRow(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n != 1 {
				t.Fatalf("SELECT 1 after %s: %d, %v", tt.method, n, err)
			}
			if err := c.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if want := int64(1); tt.refuses && srv.authenticated.Load() != want {
				t.Fatalf("the server saw %d proven passwords, want %d", srv.authenticated.Load(), want)
			}

			c, err = pgx.Connect(ctx, dsn("wrong"))
			if !tt.refuses {
				if err != nil {
					t.Fatalf("trust refused a connection: %v", err)
				}
				c.Close(ctx)
				return
			}
			if err == nil {
				c.Close(ctx)
				t.Fatal("a wrong password connected through the proxy")
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "28P01" || !strings.Contains(pgErr.Message, `"alice"`) {
				t.Fatalf("a wrong password: want the server's 28P01, got %v", err)
			}
		})
	}
}
