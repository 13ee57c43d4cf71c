package storage

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func newPL(t tT, root string) *PowerLossFS {
	t.Helper()
	pl, err := NewPowerLossFS(root)
	if err != nil {
		t.Fatalf("NewPowerLossFS: %v", err)
	}
	return pl
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeSynced(t *testing.T, fs FS, name, data string, sync bool) File {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	mustDo(t, err)
	_, err = f.Write([]byte(data))
	mustDo(t, err)
	if sync {
		mustDo(t, f.Sync())
	}
	return f
}

// A kill -9 (here: abandoning the PowerLossFS) keeps exactly the synced bytes and the
// synced directory entries.
func TestPowerLossFSKeepsExactlyWhatWasSynced(t *testing.T) {
	root := t.TempDir()
	pl := newPL(t, root)
	a := filepath.Join(root, "a")
	mustDo(t, mkdirAllDurable(pl, filepath.Join(a, "b")))

	x := writeSynced(t, pl, filepath.Join(a, "x"), "hello ", true)
	mustDo(t, pl.SyncDir(a))
	x.Write([]byte("world")) // never synced
	// Data synced, directory entry not.
	writeSynced(t, pl, filepath.Join(a, "y"), "data", true)
	// Directory entry synced, data not.
	writeSynced(t, pl, filepath.Join(a, "b", "z"), "lost", false)
	mustDo(t, pl.SyncDir(filepath.Join(a, "b")))
	// A directory whose entry was never synced, holding a synced file in a synced dir.
	mustDo(t, pl.MkdirAll(filepath.Join(root, "c"), 0o755))
	writeSynced(t, pl, filepath.Join(root, "c", "w"), "w", true)
	mustDo(t, pl.SyncDir(filepath.Join(root, "c")))
	// What the process sees before the crash.
	if got := readAllFS(t, pl, filepath.Join(a, "x")); string(got) != "hello world" {
		t.Fatalf("before crash: x = %q", got)
	}

	pl = newPL(t, root) // the old one is abandoned: a kill -9
	if got := readAllFS(t, pl, filepath.Join(a, "x")); string(got) != "hello " {
		t.Fatalf("x = %q, want the synced %q", got, "hello ")
	}
	if exists(pl, filepath.Join(a, "y")) {
		t.Fatal("a file whose directory entry was never synced survived")
	}
	if got := readAllFS(t, pl, filepath.Join(a, "b", "z")); len(got) != 0 {
		t.Fatalf("z = %q, want empty (entry synced, data not)", got)
	}
	if exists(pl, filepath.Join(root, "c")) {
		t.Fatal("a directory whose entry was never synced survived")
	}
	names, err := pl.ReadDir(a)
	mustDo(t, err)
	if !slices.Equal(names, []string{"b", "x"}) {
		t.Fatalf("ReadDir(a) = %v", names)
	}

	// Syncing the parent later brings a directory, and what was synced inside it, to disk.
	mustDo(t, pl.MkdirAll(filepath.Join(root, "c"), 0o755))
	writeSynced(t, pl, filepath.Join(root, "c", "w"), "w", true)
	mustDo(t, pl.SyncDir(filepath.Join(root, "c")))
	mustDo(t, pl.SyncDir(root))
	f := writeSynced(t, pl, filepath.Join(root, "c", "w"), "W", true) // overwrites offset 0
	f.Close()
	pl = newPL(t, root)
	if got := readAllFS(t, pl, filepath.Join(root, "c", "w")); string(got) != "W" {
		t.Fatalf("c/w = %q", got)
	}
	// The real disk holds the same, and no staging leftovers.
	if b, err := os.ReadFile(filepath.Join(root, "c", "w")); err != nil || string(b) != "W" {
		t.Fatalf("on disk: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, stagingName)); len(ents) != 0 {
		t.Fatalf("staging not empty: %v", ents)
	}
}

func TestPowerLossFSRenameAndRemove(t *testing.T) {
	root := t.TempDir()
	pl := newPL(t, root)
	p := func(s string) string { return filepath.Join(root, s) }
	for _, n := range []string{"old", "gone", "kept", "unsynced-rename"} {
		writeSynced(t, pl, p(n), n, true).Close()
	}
	mustDo(t, pl.SyncDir(root))
	mustDo(t, pl.Rename(p("old"), p("new")))
	mustDo(t, pl.Remove(p("gone")))
	mustDo(t, pl.SyncDir(root))
	// WriteFileAtomic replaces a file durably.
	mustDo(t, WriteFileAtomic(pl, p("new"), []byte("replaced")))
	// Not synced: undone by the crash.
	mustDo(t, pl.Rename(p("unsynced-rename"), p("renamed")))
	mustDo(t, pl.Remove(p("kept")))

	pl = newPL(t, root)
	names, err := pl.ReadDir(root)
	mustDo(t, err)
	if want := []string{"kept", "new", "unsynced-rename"}; !slices.Equal(names, want) {
		t.Fatalf("entries %v, want %v", names, want)
	}
	if got := readAllFS(t, pl, p("new")); string(got) != "replaced" {
		t.Fatalf("new = %q", got)
	}

	// A directory tree renamed and removed.
	mustDo(t, mkdirAllDurable(pl, p("d/e")))
	writeSynced(t, pl, p("d/e/f"), "f", true).Close()
	mustDo(t, pl.SyncDir(p("d/e")))
	mustDo(t, pl.Rename(p("d"), p("d2")))
	mustDo(t, pl.SyncDir(root))
	pl = newPL(t, root)
	if got := readAllFS(t, pl, p("d2/e/f")); string(got) != "f" || exists(pl, p("d")) {
		t.Fatalf("after renaming a directory: d2/e/f = %q, d exists %v", got, exists(pl, p("d")))
	}
	// A swap through a temporary name, made durable at once.
	mustDo(t, pl.Rename(p("kept"), p("tmp")))
	mustDo(t, pl.Rename(p("new"), p("kept")))
	mustDo(t, pl.Rename(p("tmp"), p("new")))
	mustDo(t, pl.RemoveAll(p("d2")))
	mustDo(t, pl.SyncDir(root))
	pl = newPL(t, root)
	if a, b := readAllFS(t, pl, p("kept")), readAllFS(t, pl, p("new")); string(a) != "replaced" || string(b) != "kept" {
		t.Fatalf("after swap: kept = %q, new = %q", a, b)
	}
	if exists(pl, p("d2")) {
		t.Fatal("removed directory survived")
	}
	if _, err := os.Stat(p("d2")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removed directory still on disk: %v", err)
	}

	// Paths outside the root are refused.
	if _, err := pl.OpenFile(filepath.Join(root, "..", "escape"), os.O_CREATE|os.O_RDWR, 0o644); !errors.Is(err, ErrOutsideRoot) {
		t.Fatalf("open outside the root: %v", err)
	}
}

// A log on a PowerLossFS recovers exactly its flushed prefix after a kill.
func TestPowerLossFSLogKeepsTheFlushedPrefix(t *testing.T) {
	for _, segBytes := range []int64{1 << 30, 900} {
		root := t.TempDir()
		o := Options{FS: newPL(t, root), Dir: filepath.Join(root, "topics", "t-0"), SegmentBytes: segBytes, IndexIntervalBytes: 200}
		l := mustOpen(t, o)
		m := newModel()
		for i := 0; i < 20; i++ {
			m.append(t, l, m.data(1, 1+i%3, int64(i), 60))
		}
		mustDo(t, l.Flush())
		flushed := l.FlushedIndex()
		for i := 0; i < 15; i++ {
			m.append(t, l, m.data(2, 2, int64(100+i), 60))
		}
		o.FS = newPL(t, root) // l and its FS are abandoned
		l = m.afterCrash(t, o, flushed)
		if l.LastIndex() != flushed {
			t.Fatalf("LastIndex %d, want exactly the flushed %d", l.LastIndex(), flushed)
		}
		// Truncate (rewrites below the durable length), append, flush, crash again.
		mustDo(t, l.TruncateSuffix(flushed-3))
		m.truncate(flushed - 3)
		for i := 0; i < 5; i++ {
			m.append(t, l, m.data(3, 1, int64(200+i), 10))
		}
		mustDo(t, l.Flush())
		m.append(t, l, m.data(3, 1, 300, 10))
		o.FS = newPL(t, root)
		l = m.afterCrash(t, o, m.lastIndex()-1)
		if l.LastIndex() != m.lastIndex() {
			t.Fatalf("LastIndex %d, want %d", l.LastIndex(), m.lastIndex())
		}
		l.Close()
	}
}

// Files synced concurrently with directory syncs all reach the disk.
func TestPowerLossFSConcurrentSyncs(t *testing.T) {
	root := t.TempDir()
	pl := newPL(t, root)
	const writers, rounds = 8, 30
	done := make(chan error, writers)
	stop := make(chan struct{})
	syncer := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				syncer <- nil
				return
			default:
			}
			if err := pl.SyncDir(root); err != nil {
				syncer <- err
				return
			}
		}
	}()
	for w := range writers {
		go func() {
			f, err := pl.OpenFile(filepath.Join(root, fmt.Sprintf("f%d", w)), os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				done <- err
				return
			}
			for i := range rounds {
				if _, err := f.Write([]byte{byte('a' + i%26)}); err != nil {
					done <- err
					return
				}
				if err := f.Sync(); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range writers {
		mustDo(t, <-done)
	}
	close(stop)
	mustDo(t, <-syncer)
	mustDo(t, pl.SyncDir(root))
	pl = newPL(t, root)
	for w := range writers {
		if got := readAllFS(t, pl, filepath.Join(root, fmt.Sprintf("f%d", w))); len(got) != rounds {
			t.Fatalf("f%d: %d bytes, want %d", w, len(got), rounds)
		}
	}
}

// MemFS kept a durable snapshot in the data's backing array; a write past a truncation
// that left a hole used to zero the durable bytes in place.
func TestMemFSWriteAfterTruncateKeepsDurableContent(t *testing.T) {
	fs := NewMemFS()
	f, _ := fs.OpenFile("/x", os.O_CREATE|os.O_RDWR, 0o644)
	f.Write([]byte("0123456789"))
	f.Write([]byte("a")) // grows the capacity beyond the length
	f.Sync()
	fs.SyncDir("/")
	f.Truncate(2)
	f.WriteAt([]byte("Z"), 12)
	fs.Crash()
	if got := readAllFS(t, fs, "/x"); string(got) != "0123456789a" {
		t.Fatalf("after crash: %q", got)
	}
}

// TestRapidPowerLossFSMatchesMemFS runs random operation sequences on a MemFS and on a
// PowerLossFS; after MemFS.Crash and a reopen of the PowerLossFS on its root, both must
// hold the same tree.
func TestRapidPowerLossFSMatchesMemFS(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		root, err := os.MkdirTemp("", "powerloss-rapid-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(root)
		mem := NewMemFS()
		pl := newPL(rt, root)
		// A node renamed across directories can be durable in both; MemFS then shares it
		// between the two paths (like a hard link) where the disk holds two copies. That
		// only shows if the test carries on after a crash, so such runs crash once, at the end.
		crossDir := rapid.Bool().Draw(rt, "crossDir")
		type handle struct{ m, p File }
		var handles []handle
		names := []string{"a", "b", "x"}
		genPath := func(label string) string {
			n := rapid.IntRange(1, 3).Draw(rt, label+"Depth")
			parts := make([]string, n)
			for i := range parts {
				parts[i] = rapid.SampledFrom(names).Draw(rt, label)
			}
			return "/" + strings.Join(parts, "/")
		}
		genDir := func() string {
			if rapid.IntRange(0, 3).Draw(rt, "atRoot") == 0 {
				return "/"
			}
			return genPath("dir")
		}
		real := func(p string) string { return filepath.Join(root, filepath.FromSlash(p)) }
		same := func(op string, em, ep error) {
			if (em == nil) != (ep == nil) {
				rt.Fatalf("%s: MemFS %v, PowerLossFS %v", op, em, ep)
			}
		}
		pick := func() (handle, bool) {
			if len(handles) == 0 {
				return handle{}, false
			}
			return handles[rapid.IntRange(0, len(handles)-1).Draw(rt, "handle")], true
		}
		data := func() []byte {
			return []byte(rapid.StringMatching(`[a-z]{0,12}`).Draw(rt, "data"))
		}
		crash := func() {
			mem.Crash()
			pl = newPL(rt, root)
			handles = nil
			comparePowerLossTrees(rt, mem, pl, root)
		}
		ops := map[string]func(*rapid.T){
			"mkdirAll": func(rt *rapid.T) {
				p := genPath("mkdir")
				same("mkdirAll "+p, mem.MkdirAll(p, 0o755), pl.MkdirAll(real(p), 0o755))
			},
			"open": func(rt *rapid.T) {
				p := genPath("open")
				flag := rapid.SampledFrom([]int{os.O_RDWR | os.O_CREATE, os.O_RDWR, os.O_RDWR | os.O_CREATE | os.O_TRUNC,
					os.O_RDWR | os.O_CREATE | os.O_EXCL, os.O_RDWR | os.O_CREATE | os.O_APPEND, os.O_RDONLY}).Draw(rt, "flag")
				fm, em := mem.OpenFile(p, flag, 0o644)
				fp, ep := pl.OpenFile(real(p), flag, 0o644)
				same("open "+p, em, ep)
				if em == nil {
					handles = append(handles, handle{fm, fp})
				}
			},
			"write": func(rt *rapid.T) {
				h, ok := pick()
				if !ok {
					rt.Skip()
				}
				b := data()
				_, em := h.m.Write(b)
				_, ep := h.p.Write(b)
				same("write", em, ep)
			},
			"writeAt": func(rt *rapid.T) {
				h, ok := pick()
				if !ok {
					rt.Skip()
				}
				b, off := data(), int64(rapid.IntRange(0, 40).Draw(rt, "off"))
				_, em := h.m.WriteAt(b, off)
				_, ep := h.p.WriteAt(b, off)
				same("writeAt", em, ep)
			},
			"truncate": func(rt *rapid.T) {
				h, ok := pick()
				if !ok {
					rt.Skip()
				}
				size := int64(rapid.IntRange(0, 40).Draw(rt, "size"))
				same("truncate", h.m.Truncate(size), h.p.Truncate(size))
			},
			"sync": func(rt *rapid.T) {
				h, ok := pick()
				if !ok {
					rt.Skip()
				}
				same("sync", h.m.Sync(), h.p.Sync())
			},
			"close": func(rt *rapid.T) {
				h, ok := pick()
				if !ok {
					rt.Skip()
				}
				same("close", h.m.Close(), h.p.Close())
			},
			"remove": func(rt *rapid.T) {
				p := genPath("remove")
				same("remove "+p, mem.Remove(p), pl.Remove(real(p)))
			},
			"removeAll": func(rt *rapid.T) {
				p := genPath("removeAll")
				same("removeAll "+p, mem.RemoveAll(p), pl.RemoveAll(real(p)))
			},
			"rename": func(rt *rapid.T) {
				from := genPath("from")
				to := genPath("to")
				if !crossDir {
					to = path.Join(path.Dir(from), rapid.SampledFrom(names).Draw(rt, "toName"))
				}
				if to == from || strings.HasPrefix(to, from+"/") {
					rt.Skip("rename into itself")
				}
				same("rename "+from+" "+to, mem.Rename(from, to), pl.Rename(real(from), real(to)))
			},
			"syncDir": func(rt *rapid.T) {
				d := genDir()
				same("syncDir "+d, mem.SyncDir(d), pl.SyncDir(real(d)))
			},
			"writeFileAtomic": func(rt *rapid.T) {
				p := genPath("atomic")
				b := data()
				same("writeFileAtomic "+p, WriteFileAtomic(mem, p, b), WriteFileAtomic(pl, real(p), b))
			},
			"": func(rt *rapid.T) { // invariant: both show the same current tree
				comparePowerLossTrees(rt, mem, pl, root)
			},
		}
		if !crossDir {
			ops["crash"] = func(rt *rapid.T) { crash() }
		}
		rt.Repeat(ops)
		crash()
		if ents, _ := os.ReadDir(filepath.Join(root, stagingName)); len(ents) != 0 {
			rt.Fatalf("staging not empty: %v", ents)
		}
	})
}

// comparePowerLossTrees fails unless mem (from "/") and pl (from root) hold the same tree.
func comparePowerLossTrees(t tT, mem *MemFS, pl *PowerLossFS, root string) {
	t.Helper()
	var walk func(p string)
	walk = func(p string) {
		mn, err := mem.ReadDir(p)
		if err != nil {
			t.Fatalf("MemFS ReadDir %s: %v", p, err)
		}
		pn, err := pl.ReadDir(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			t.Fatalf("PowerLossFS ReadDir %s: %v", p, err)
		}
		if !slices.Equal(mn, pn) {
			t.Fatalf("%s: MemFS has %v, PowerLossFS %v", p, mn, pn)
		}
		for _, n := range mn {
			c := path.Join(p, n)
			mi, err := mem.Stat(c)
			if err != nil {
				t.Fatal(err)
			}
			pi, err := pl.Stat(filepath.Join(root, filepath.FromSlash(c)))
			if err != nil {
				t.Fatal(err)
			}
			if mi.IsDir() != pi.IsDir() {
				t.Fatalf("%s: MemFS dir %v, PowerLossFS dir %v", c, mi.IsDir(), pi.IsDir())
			}
			if mi.IsDir() {
				walk(c)
				continue
			}
			mb, err := ReadFile(mem, c)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := ReadFile(pl, filepath.Join(root, filepath.FromSlash(c)))
			if err != nil {
				t.Fatal(err)
			}
			if string(mb) != string(pb) {
				t.Fatalf("%s: MemFS %q, PowerLossFS %q", c, mb, pb)
			}
		}
	}
	walk("/")
}
