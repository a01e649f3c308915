package sqlproxy

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"database/sql"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"net"
	"testing"

	mysql "github.com/redeliver/redeliver/pkg/_mysqldriver"
)

// fakeSHA2Server is a MySQL 8 server as far as caching_sha2_password
// goes: its fast path (the password's hash cached) answers 0x01 0x03
// then OK; its full exchange sends 0x01 0x04, the client asks for the
// RSA key (0x02), gets it, and sends the password encrypted with it,
// which the server decrypts and checks. Then it answers COM_PING.
type fakeSHA2Server struct {
	ln       net.Listener
	key      *rsa.PrivateKey
	password string
	fast     bool
	full     chan bool // each full exchange's verdict
}

func startFakeSHA2Server(t *testing.T, password string, fast bool) *fakeSHA2Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSHA2Server{ln: ln, key: key, password: password, fast: fast, full: make(chan bool, 4)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s.serve(c)
			}()
		}
	}()
	return s
}

func (s *fakeSHA2Server) serve(c net.Conn) error {
	scramble := []byte("abcdefghijklmnopqrst")
	caps := uint32(1 | 4 | 8 | capProtocol41 | capSSL | 0x2000 | 0x8000 | 1<<17 | 1<<19)
	g := []byte{greetingProtocol10}
	g = append(g, "8.0.36\x00"...)
	g = binary.LittleEndian.AppendUint32(g, 77)
	g = append(g, scramble[:8]...)
	g = append(g, 0)
	g = binary.LittleEndian.AppendUint16(g, uint16(caps))
	g = append(g, 255)
	g = binary.LittleEndian.AppendUint16(g, 2)
	g = binary.LittleEndian.AppendUint16(g, uint16(caps>>16))
	g = append(g, 21)
	g = append(g, make([]byte, 10)...)
	g = append(g, scramble[8:]...)
	g = append(g, 0)
	g = append(g, "caching_sha2_password\x00"...)
	write := func(seq byte, payload []byte) error {
		_, err := c.Write(frame(seq, payload))
		return err
	}
	if err := write(0, g); err != nil {
		return err
	}
	resp, err := readPacket(c, nil)
	if err != nil {
		return err
	}
	if clientCaps(resp.payload)&capSSL != 0 {
		return errors.New("the client asked for TLS")
	}
	ok := []byte{0, 0, 0, 2, 0, 0, 0}
	seq := resp.seq + 1
	if s.fast {
		if err := write(seq, []byte{1, 3}); err != nil {
			return err
		}
		seq++
	} else {
		if err := write(seq, []byte{1, 4}); err != nil {
			return err
		}
		ask, err := readPacket(c, nil)
		if err != nil {
			return err
		}
		if !bytes.Equal(ask.payload, []byte{2}) {
			return errors.New("the client did not ask for the public key")
		}
		der, _ := x509.MarshalPKIXPublicKey(&s.key.PublicKey)
		if err := write(ask.seq+1, append([]byte{1}, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})...)); err != nil {
			return err
		}
		enc, err := readPacket(c, nil)
		if err != nil {
			return err
		}
		plain, err := rsa.DecryptOAEP(sha1.New(), nil, s.key, enc.payload, nil)
		for i := range plain {
			plain[i] ^= scramble[i%len(scramble)]
		}
		right := err == nil && string(plain) == s.password+"\x00"
		s.full <- right
		seq = enc.seq + 1
		if !right {
			return write(seq, []byte("\xff\x15\x04#28000Access denied"))
		}
	}
	if err := write(seq, ok); err != nil {
		return err
	}
	for {
		cmd, err := readPacket(c, nil)
		if err != nil {
			return err
		}
		if len(cmd.payload) == 0 || cmd.payload[0] == comQuit {
			return nil
		}
		if err := write(1, ok); err != nil {
			return err
		}
	}
}

// TestMySQLCachingSHA2PassesThrough: caching_sha2_password through the
// proxy in plain TCP, both ways it goes: the fast path, and the full
// exchange in which the client fetches the server's RSA key and sends
// the password encrypted with it — relayed byte for byte, the server
// decrypting the right password, refusing a wrong one.
func TestMySQLCachingSHA2PassesThrough(t *testing.T) {
	for _, tt := range []struct {
		name     string
		fast     bool
		password string
		ok       bool
	}{
		{"fast path", true, "pw", true},
		{"full exchange", false, "pw", true},
		{"full exchange, wrong password", false, "wrong", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := startFakeSHA2Server(t, "pw", tt.fast)
			p, err := ListenMySQL(s.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			cfg := mysql.NewConfig()
			cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", p.Addr(), "app", tt.password
			c, err := mysql.NewConnector(cfg)
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			err = db.Ping()
			if (err == nil) != tt.ok {
				t.Fatalf("ping through the proxy: %v, want success %v", err, tt.ok)
			}
			if !tt.fast {
				if right := <-s.full; right != tt.ok {
					t.Fatalf("the server decrypted the right password: %v, want %v", right, tt.ok)
				}
			}
			if bs := p.Backends(); len(bs) == 0 || bs[0].PID != 77 {
				t.Errorf("backends %+v, want the greeting's thread 77", bs)
			}
		})
	}
}
