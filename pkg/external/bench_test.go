package external

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/template"
)

// BenchmarkReplay measures what redeliver itself spends per delivery of a
// replay into a target: the consumer is an HTTP handler that only answers
// 201, and the effect table is an empty SQLite file.
func BenchmarkReplay(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	if u := os.Getenv("REDELIVER_BENCH_TARGET"); u != "" {
		srv.URL = u
	}
	defer srv.Close()
	dir := b.TempDir()
	db := filepath.Join(dir, "fx.db")
	capture := filepath.Join(dir, "capture.ndjson")
	var sb strings.Builder
	for i := range b.N {
		fmt.Fprintf(&sb, `{"specversion":"1.0","id":"evt-%d","source":"shop","type":"order.paid","data":{"orderId":"O-%d","amount":%d}}`+"\n", i, i, i%100)
	}
	if err := os.WriteFile(capture, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := createTable(db); err != nil {
		b.Fatal(err)
	}
	t := &ReplayTarget{File: "t.yaml",
		Target:  &scenario.Target{HTTP: &scenario.HTTPTarget{URL: srv.URL, Method: "POST", Mode: scenario.ModeStructured, Timeout: scenario.DefaultTimeout}},
		Effects: &scenario.Effects{DB: db, Table: "payments", Key: "order_id", KeyOf: template.MustParse("{data.orderId}")},
	}
	b.ResetTimer()
	if _, err := runTarget(context.Background(), t, replay.Options{Inputs: []string{capture}, Parallel: 1}); err != nil {
		b.Fatal(err)
	}
}

func createTable(path string) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec("CREATE TABLE payments (order_id TEXT, event_id TEXT)")
	return err
}
