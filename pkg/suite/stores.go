package suite

import (
	"context"
	"errors"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/postgres"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

// stores hands each scenario file a fresh store of the kind --db names.
type stores struct {
	name   string
	paths  []string         // SQLite: each file's database
	server *postgres.Server // PostgreSQL: the one server of the run
	// schemas are the files' schemas on the server, dropped (or kept) at
	// the end of the run.
	schemas []*postgres.DB
}

func openStores(ctx context.Context, scenarios []*scenario.Scenario, opts Options) (*stores, error) {
	if postgres.IsDSN(opts.DB) {
		srv, err := postgres.Connect(ctx, opts.DB, opts.Keep)
		if err != nil {
			return nil, err
		}
		return &stores{name: "PostgreSQL " + srv.Where(), server: srv}, nil
	}
	if opts.Keep {
		return nil, inputf("--keep keeps the schemas of a PostgreSQL run; a SQLite --db file is always kept")
	}
	paths, err := dbPaths(scenarios, opts.DB)
	if err != nil {
		return nil, err
	}
	st := &stores{name: "SQLite in memory", paths: paths}
	if opts.DB != "" && opts.DB != sqlite.Memory {
		st.name = "SQLite file"
	}
	return st, nil
}

// opener returns the opener of scenario i: each call makes a fresh store.
func (st *stores) opener(i int) builtin.Opener {
	if st.server != nil {
		// A file's repetitions share its schema, emptied before each.
		var db *postgres.DB
		return func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
			if db != nil {
				return reused{db}, db.Reset(ctx)
			}
			var err error
			if db, err = st.server.Create(ctx, s.Handler.Config); err != nil {
				return nil, err
			}
			st.schemas = append(st.schemas, db)
			return reused{db}, nil
		}
	}
	path := st.paths[i]
	return func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
		db, err := sqlite.Create(ctx, path, s.Handler.Config)
		if errors.Is(err, sqlite.ErrNotOurs) || errors.Is(err, sqlite.ErrNotRegular) || errors.Is(err, sqlite.ErrBadPath) {
			return nil, &problem.Error{Kind: problem.InvalidInput, Msg: err.Error(), Err: err}
		}
		return db, err
	}
}

// reused is a file's schema lent to one run of the file: closing it ends
// the run, not the schema.
type reused struct{ *postgres.DB }

func (reused) Close() error { return nil }

func (st *stores) close() {
	if st.server == nil {
		return
	}
	for _, db := range st.schemas {
		db.Close()
	}
	st.server.Close()
}

func (st *stores) kept() []string {
	if st.server == nil {
		return nil
	}
	return st.server.Kept()
}
