module github.com/go-sql-driver/mysql

go 1.24.0

require filippo.io/edwards25519 v1.2.0
