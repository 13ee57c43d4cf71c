package storage

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"
)

func readAllFS(t *testing.T, fs FS, name string) []byte {
	t.Helper()
	b, err := ReadFile(fs, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}

func exists(fs FS, name string) bool {
	_, err := fs.Stat(name)
	return err == nil
}

func TestMemFSCrashSemantics(t *testing.T) {
	fs := NewMemFS()
	if err := fs.MkdirAll("/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	fs.SyncDir("/")
	fs.SyncDir("/a")

	// A synced file in a synced directory survives exactly; unsynced appends are lost.
	f, _ := fs.OpenFile("/a/b/x", os.O_CREATE|os.O_RDWR, 0o644)
	f.Write([]byte("hello "))
	f.Sync()
	fs.SyncDir("/a/b")
	f.Write([]byte("world"))
	// A directory entry that was synced, then removed without a sync: comes back.
	h, _ := fs.OpenFile("/a/b/z", os.O_CREATE|os.O_RDWR, 0o644)
	h.Write([]byte("zzz"))
	h.Sync()
	fs.SyncDir("/a/b")
	fs.Remove("/a/b/z")
	// A file whose data is synced but whose directory entry is not.
	g, _ := fs.OpenFile("/a/b/y", os.O_CREATE|os.O_RDWR, 0o644)
	g.Write([]byte("data"))
	g.Sync()
	// A rename that was not synced is undone.
	fs.Rename("/a/b/x", "/a/b/x2")

	fs.Crash()
	if got := readAllFS(t, fs, "/a/b/x"); string(got) != "hello " {
		t.Fatalf("x = %q", got)
	}
	if exists(fs, "/a/b/x2") {
		t.Fatal("unsynced rename survived")
	}
	if exists(fs, "/a/b/y") {
		t.Fatal("file with unsynced directory entry survived")
	}
	if got := readAllFS(t, fs, "/a/b/z"); string(got) != "zzz" {
		t.Fatalf("z = %q", got)
	}
	// Old handles are dead.
	if _, err := f.Write([]byte("!")); !errors.Is(err, ErrStaleHandle) {
		t.Fatalf("write through a pre-crash handle: %v", err)
	}

	// Truncation and overwrite below the synced length are lost unless synced.
	f, _ = fs.OpenFile("/a/b/x", os.O_RDWR, 0)
	f.Truncate(2)
	f.WriteAt([]byte("XY"), 0)
	fs.Crash()
	if got := readAllFS(t, fs, "/a/b/x"); string(got) != "hello " {
		t.Fatalf("after unsynced truncate: %q", got)
	}
	f, _ = fs.OpenFile("/a/b/x", os.O_RDWR, 0)
	f.Truncate(2)
	f.WriteAt([]byte("XYZ"), 1)
	f.Sync()
	fs.Crash()
	if got := readAllFS(t, fs, "/a/b/x"); string(got) != "hXYZ" {
		t.Fatalf("after synced truncate+write: %q", got)
	}

	// A directory created without syncing its parent disappears with its contents.
	fs.MkdirAll("/a/c", 0o755)
	k, _ := fs.OpenFile("/a/c/k", os.O_CREATE|os.O_RDWR, 0o644)
	k.Write([]byte("k"))
	k.Sync()
	fs.SyncDir("/a/c")
	fs.Crash()
	if exists(fs, "/a/c") {
		t.Fatal("unsynced directory survived")
	}
}

func TestMemFSSharingAfterSync(t *testing.T) {
	// Synced content must not change when the file is modified afterwards (the durable
	// copy shares the backing array).
	fs := NewMemFS()
	fs.SyncDir("/")
	f, _ := fs.OpenFile("/f", os.O_CREATE|os.O_RDWR, 0o644)
	fs.SyncDir("/")
	data := bytes.Repeat([]byte{1}, 100)
	f.WriteAt(data, 0)
	f.Sync()
	f.WriteAt([]byte{9, 9}, 10)       // below the synced length
	f.WriteAt([]byte{8}, 100)         // an append
	f.Truncate(50)                    // shrink
	f.WriteAt([]byte{7, 7, 7, 7}, 48) // and regrow over old bytes
	fs.Crash()
	if got := readAllFS(t, fs, "/f"); !bytes.Equal(got, data) {
		t.Fatalf("synced content changed: %v", got[:20])
	}
	f, _ = fs.OpenFile("/f", os.O_RDWR, 0)
	b := make([]byte, 10)
	if n, err := f.ReadAt(b, 95); n != 5 || err != io.EOF {
		t.Fatalf("short ReadAt: %d %v", n, err)
	}
}

func TestMemFSTornWritesKeepOnlyAPrefixOfUnsyncedBytes(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		fs := NewMemFS()
		fs.SyncDir("/")
		f, _ := fs.OpenFile("/f", os.O_CREATE|os.O_RDWR, 0o644)
		fs.SyncDir("/")
		synced := bytes.Repeat([]byte{0xaa}, 1000)
		f.Write(synced)
		f.Sync()
		unsynced := bytes.Repeat([]byte{0xbb}, 500)
		f.Write(unsynced)
		// Another file, fully synced: must be untouched.
		g, _ := fs.OpenFile("/g", os.O_CREATE|os.O_RDWR, 0o644)
		g.Write([]byte("gg"))
		g.Sync()
		fs.SyncDir("/")
		fs.CrashWithTornWrites(rng)
		got := readAllFS(t, fs, "/f")
		if !bytes.HasPrefix(got, synced) {
			t.Fatalf("seed %d: synced bytes damaged", seed)
		}
		if len(got) > len(synced)+len(unsynced)+256 {
			t.Fatalf("seed %d: %d bytes", seed, len(got))
		}
		if g := readAllFS(t, fs, "/g"); string(g) != "gg" {
			t.Fatalf("seed %d: synced file changed: %q", seed, g)
		}
	}
}

func TestMemFSErrors(t *testing.T) {
	fs := NewMemFS()
	if _, err := fs.OpenFile("/nope/x", os.O_CREATE|os.O_RDWR, 0o644); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	f, _ := fs.OpenFile("/x", os.O_CREATE|os.O_RDWR, 0o644)
	if _, err := fs.OpenFile("/x", os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644); !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	r, _ := fs.OpenFile("/x", os.O_RDONLY, 0)
	if _, err := r.Write([]byte("a")); err == nil {
		t.Fatal("write to read-only handle")
	}
	f.Close()
	if _, err := f.Write([]byte("a")); !errors.Is(err, os.ErrClosed) {
		t.Fatal(err)
	}
	if err := fs.Remove("/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := fs.RemoveAll("/missing/deeper"); err != nil {
		t.Fatal(err)
	}
	fs.MkdirAll("/d/e", 0o755)
	if err := fs.Remove("/d"); err == nil {
		t.Fatal("removed a non-empty directory")
	}
	names, _ := fs.ReadDir("/")
	if len(names) != 2 || names[0] != "d" || names[1] != "x" {
		t.Fatalf("ReadDir = %v", names)
	}
	fi, _ := fs.Stat("/d")
	if !fi.IsDir() {
		t.Fatal("Stat of a directory")
	}
}

func TestOpenCorruptFirstHeader(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, memOpts(fs, "/d"))
	l.Close()
	f, _ := fs.OpenFile("/d/00000000000000000001.log", os.O_RDWR, 0)
	f.WriteAt([]byte{0xff}, 20)
	f.Close()
	if _, err := Open(memOpts(fs, "/d")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a corrupt first header: %v", err)
	}
}

// TestOpenSurvivesFreshDirectoryCrash: a log created on a fresh path survives a crash
// right after Open (the directory chain was synced).
func TestOpenSurvivesFreshDirectoryCrash(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, memOpts(fs, "/var/lib/cairn/topic-0"))
	m := newModel()
	m.append(t, l, m.data(1, 1, 1, 1))
	l.Flush()
	fs.Crash()
	l = mustOpen(t, memOpts(fs, "/var/lib/cairn/topic-0"))
	m.check(t, l)
	l.Close()
}
