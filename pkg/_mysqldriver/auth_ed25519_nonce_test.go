// Go MySQL Driver - A MySQL-Driver for Go's database/sql package
//
// Copyright 2026 The Go-MySQL-Driver Authors. All rights reserved.
//
// This Source Code Form is subject to the terms of the Mozilla Public
// License, v. 2.0. If a copy of the MPL was not distributed with this file,
// You can obtain one at http://mozilla.org/MPL/2.0/.

package mysql

import (
	"crypto/ed25519"
	"crypto/sha512"
	"testing"

	"filippo.io/edwards25519"
)

// MariaDB's auth switch to client_ed25519 carries a 32-byte random nonce
// with no NUL after it. A nonce whose last byte is 0 (1 in 256) must reach
// the plugin whole; stripped as a terminator, it was 31 bytes and the
// connect failed with ErrMalformPkt.
func TestAuthSwitchEd25519NonceEndingInZero(t *testing.T) {
	for _, last := range []byte{0, 1} {
		conn, mc := newRWMockConn(2)
		mc.cfg.Passwd = "secret"

		nonce := make([]byte, 32)
		for i := range nonce {
			nonce[i] = byte(i*7 + 3)
		}
		nonce[31] = last

		// auth switch request: 0xfe, the plugin's name, its data to the end
		payload := append([]byte{254}, "client_ed25519\x00"...)
		payload = append(payload, nonce...)
		conn.data = append([]byte{byte(len(payload)), 0, 0, 2}, payload...)
		// OK
		conn.queuedReplies = [][]byte{{7, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0}}
		conn.maxReads = 2

		// the handshake's own scramble and plugin
		authData := []byte{96, 71, 63, 8, 1, 58, 75, 12, 69, 95, 66, 60, 117,
			31, 48, 31, 89, 39, 55, 31}
		if err := mc.handleAuthResult(authData, "mysql_native_password"); err != nil {
			t.Fatalf("nonce ending in %d: %v", last, err)
		}

		// the reply is a header and a 64-byte signature of the whole nonce
		if len(conn.written) != 4+64 || conn.written[0] != 64 || conn.written[3] != 3 {
			t.Fatalf("nonce ending in %d: got unexpected data: %v", last, conn.written)
		}
		h := sha512.Sum512([]byte(mc.cfg.Passwd))
		s, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
		if err != nil {
			t.Fatal(err)
		}
		public := (&edwards25519.Point{}).ScalarBaseMult(s).Bytes()
		if !ed25519.Verify(public, nonce, conn.written[4:]) {
			t.Errorf("nonce ending in %d: the signature does not verify for the nonce sent", last)
		}
	}
}
