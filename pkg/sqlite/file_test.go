package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/redeliver/redeliver/pkg/handler"
)

var fileCfg = handler.Config{Strategy: handler.EventID, Consumer: "c", Effect: "effects"}

// open functions of the two stores, as the table runs them.
var openers = map[string]func(ctx context.Context, path string) (func() error, error){
	"Create": func(ctx context.Context, path string) (func() error, error) {
		d, err := Create(ctx, path, fileCfg)
		if err != nil {
			return nil, err
		}
		return d.Close, nil
	},
	"OpenReplay": func(ctx context.Context, path string) (func() error, error) {
		d, err := OpenReplay(ctx, path, fileCfg)
		if err != nil {
			return nil, err
		}
		return d.Close, nil
	},
}

func TestSpecialFilesAreRefusedAndKept(t *testing.T) {
	ctx := context.Background()
	for name, openDB := range openers {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			dev := filepath.Join(dir, "null")
			if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Skipf("cannot make a device node here: %v", err)
			}
			fifo := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(fifo, 0o666); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "link")
			os.Symlink(filepath.Join(dir, "target"), link)
			for _, path := range []string{dev, fifo, link, dir} {
				before, _ := os.Lstat(path)
				closeDB, err := openDB(ctx, path)
				if err == nil {
					closeDB()
					t.Fatalf("%s: opened, want refused", path)
				}
				if !errors.Is(err, ErrNotRegular) {
					t.Errorf("%s: got %v, want ErrNotRegular", path, err)
				}
				after, err := os.Lstat(path)
				if err != nil || after.Mode() != before.Mode() || after.Size() != before.Size() {
					t.Errorf("%s: was %v, is %v (%v)", path, before.Mode(), after, err)
				}
			}
			if _, err := os.Lstat(filepath.Join(dir, "target")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the symbolic link's target was written")
			}
		})
	}
}

func TestForeignDatabaseStaysByteIdentical(t *testing.T) {
	ctx := context.Background()
	for name, openDB := range openers {
		for _, journal := range []string{"delete", "wal"} {
			t.Run(name+"/"+journal, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "foreign.db")
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(`PRAGMA journal_mode=` + journal + `; CREATE TABLE important(x); INSERT INTO important VALUES (1)`); err != nil {
					t.Fatal(err)
				}
				db.Close()
				want, _ := os.ReadFile(path)
				closeDB, err := openDB(ctx, path)
				if err == nil {
					closeDB()
					t.Fatal("opened a foreign database, want refused")
				}
				if !errors.Is(err, ErrNotOurs) {
					t.Errorf("got %v, want ErrNotOurs", err)
				}
				if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
					t.Errorf("the foreign file changed (header bytes 18-19 %x, were %x)", got[18:20], want[18:20])
				}
				for _, s := range []string{"-wal", "-shm"} {
					if _, err := os.Lstat(path + s); err == nil {
						t.Errorf("left %s beside the foreign file", s)
					}
				}
			})
		}
	}
}

func TestSecondOpenOfADatabaseInUseIsRefused(t *testing.T) {
	ctx := context.Background()
	for first, openFirst := range openers {
		for second, openSecond := range openers {
			t.Run(first+"/"+second, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "db")
				closeFirst, err := openFirst(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				closeSecond, err := openSecond(ctx, path)
				if err == nil {
					closeSecond()
					t.Fatal("second open succeeded, want refused")
				}
				if !errors.Is(err, ErrInUse) {
					t.Errorf("got %v, want ErrInUse", err)
				}
				if err := closeFirst(); err != nil {
					t.Fatal(err)
				}
				// Released on Close: a run after it proceeds.
				if name := first + second; name == "OpenReplayCreate" || name == "CreateOpenReplay" {
					return // different kinds of database: not resumable into each other
				}
				closeAgain, err := openSecond(ctx, path)
				if err != nil {
					t.Fatalf("after the first closed: %v", err)
				}
				closeAgain()
			})
		}
	}
}

func TestURIsAreRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, openDB := range openers {
		for _, path := range []string{"file:" + filepath.Join(dir, "x.db"), filepath.Join(dir, "x.db?mode=memory"), filepath.Join(dir, "x#y")} {
			closeDB, err := openDB(ctx, path)
			if err == nil {
				closeDB()
				t.Errorf("%s(%s) opened, want refused", name, path)
			} else if !errors.Is(err, ErrBadPath) {
				t.Errorf("%s(%s): got %v, want ErrBadPath", name, path, err)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused paths left %d files", len(entries))
	}
}

func TestAnUnwrittenNewFileIsRemovedOnRefusal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	_, err := OpenReplay(context.Background(), path, handler.Config{Strategy: handler.EventID, Effect: "processed"})
	if err == nil {
		t.Fatal("want an error for a bad effect table")
	}
	l, err := lockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l.release()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a lock on a new file left the file behind")
	}
}
