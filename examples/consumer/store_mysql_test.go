package main

import "testing"

// TestMySQLConfig: --db takes a mysql:// URL or the Go driver's DSN, its
// parameters kept.
func TestMySQLConfig(t *testing.T) {
	tests := []struct{ dsn, addr, user, pass, db string }{
		{"mysql://root@127.0.0.1:3306/test", "127.0.0.1:3306", "root", "", "test"},
		{"mysql://app:p%40ss@db/shop?parseTime=true", "db:3306", "app", "p@ss", "shop"},
		{"app:pw@tcp(127.0.0.1:40000)/shop", "127.0.0.1:40000", "app", "pw", "shop"},
	}
	for _, tt := range tests {
		cfg, err := mysqlConfig(tt.dsn)
		if err != nil {
			t.Errorf("mysqlConfig(%q): %v", tt.dsn, err)
			continue
		}
		if cfg.Addr != tt.addr || cfg.User != tt.user || cfg.Passwd != tt.pass || cfg.DBName != tt.db {
			t.Errorf("mysqlConfig(%q) = %s %s %s %s, want %s %s %s %s", tt.dsn, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName, tt.addr, tt.user, tt.pass, tt.db)
		}
	}
	if cfg, _ := mysqlConfig("mysql://a@h/d?parseTime=true"); cfg == nil || !cfg.ParseTime {
		t.Error("a URL's parameters are lost")
	}
	if _, err := mysqlConfig("mysql://a@h/d?parseTime=maybe"); err == nil {
		t.Error("a bad parameter is taken")
	}
}

// TestPlaceholders: the store's statements, written with $N, take ? on
// MySQL and are left as they are elsewhere.
func TestPlaceholders(t *testing.T) {
	q := `SELECT id FROM t WHERE a = $1 AND b = $2 AND c = $10`
	if got, want := (&store{mysql: true}).q(q), `SELECT id FROM t WHERE a = ? AND b = ? AND c = ?`; got != want {
		t.Errorf("on MySQL: %q, want %q", got, want)
	}
	if got := (&store{postgres: true}).q(q); got != q {
		t.Errorf("on PostgreSQL: %q, want it unchanged", got)
	}
}
