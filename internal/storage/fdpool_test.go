package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestMain runs the package's tests with a budget of 16 descriptors, so that every test on
// the real filesystem also runs with its files' descriptors closed and reopened under it.
func TestMain(m *testing.M) {
	defaultPool.mu.Lock()
	defaultPool.budget = 16
	defaultPool.mu.Unlock()
	os.Exit(m.Run())
}

func poolFS(budget int) (osFS, *fdPool) {
	p := newFDPool(budget)
	return osFS{pool: p}, p
}

func (p *fdPool) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}

func writeAndSync(t *testing.T, f File, data []byte) {
	t.Helper()
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, f File) []byte {
	t.Helper()
	n, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if err := readFull(f, b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// Many open files hold at most the budget's descriptors once synced, and each still reads
// back what was written to it.
func TestPoolKeepsTheBudgetAndReopens(t *testing.T) {
	fs, p := poolFS(16)
	dir := t.TempDir()
	var files []File
	for i := range 100 {
		f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		writeAndSync(t, f, []byte(fmt.Sprintf("file %d", i)))
		files = append(files, f)
		if p.held() > 16 {
			t.Fatalf("%d descriptors held after %d files, budget 16", p.held(), i+1)
		}
	}
	for i, f := range files {
		if got := string(readAll(t, f)); got != fmt.Sprintf("file %d", i) {
			t.Fatalf("file %d reads %q", i, got)
		}
		if p.held() > 16 {
			t.Fatalf("%d descriptors held, budget 16", p.held())
		}
	}
	// Syncing files whose descriptors the budget closed opens none: they hold nothing
	// unsynced.
	evictAll(p)
	for _, f := range files {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if p.held() != 0 {
		t.Fatalf("syncing %d synced files opened %d descriptors", len(files), p.held())
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if p.held() != 0 {
		t.Fatalf("%d descriptors held after every file closed", p.held())
	}
}

// A file with writes not yet synced keeps its descriptor beyond the budget; a Sync lets
// it go.
func TestPoolKeepsUnsyncedFilesOpen(t *testing.T) {
	fs, p := poolFS(16)
	dir := t.TempDir()
	var files []File
	for i := range 40 {
		f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("unsynced"), 0); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if p.held() != 40 {
		t.Fatalf("%d descriptors held for 40 files with unsynced writes, want 40", p.held())
	}
	for _, f := range files {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if p.held() > 16 {
		t.Fatalf("%d descriptors held once synced, budget 16", p.held())
	}
}

// evictAll closes every idle descriptor of p.
func evictAll(p *fdPool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evictIdleLocked()
}

func (p *fdPool) waiters() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}

// At the ceiling, with every descriptor holding unsynced writes, neither a new file nor a
// closed one's reopen takes a descriptor until a Sync releases one; the pool then holds no
// more than the ceiling. Past the wait's bound an open goes ahead.
func TestPoolWaitsAtTheCeiling(t *testing.T) {
	fs, p := poolFS(16)
	p.ceiling = 20
	dir := t.TempDir()
	var files []File
	for i := range 21 {
		f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		if i == 0 { // synced, so its descriptor is closed for the budget
			writeAndSync(t, f, []byte("synced"))
			evictAll(p)
			continue
		}
		if _, err := f.WriteAt([]byte("unsynced"), 0); err != nil {
			t.Fatal(err)
		}
	}
	closed := files[0]
	files = files[1:]
	if p.held() != 20 {
		t.Fatalf("%d descriptors held, want the ceiling's 20", p.held())
	}
	type result struct {
		what string
		err  error
	}
	done := make(chan result, 2)
	go func() {
		_, err := fs.OpenFile(filepath.Join(dir, "new"), os.O_RDWR|os.O_CREATE, 0o644)
		done <- result{"a new file", err}
	}()
	go func() {
		_, err := closed.ReadAt(make([]byte, 6), 0)
		done <- result{"a reopen", err}
	}()
	waitUntil(t, func() bool { return p.waiters() == 2 })
	select {
	case r := <-done:
		t.Fatalf("%s went past the ceiling (err %v)", r.what, r.err)
	default:
	}
	for i := range 2 {
		if err := files[i].Sync(); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if r := <-done; r.err != nil {
			t.Fatalf("%s after a Sync released room: %v", r.what, r.err)
		}
	}
	if p.held() > 20 {
		t.Fatalf("%d descriptors held, ceiling 20", p.held())
	}

	p.mu.Lock()
	p.maxWait = time.Millisecond
	p.mu.Unlock()
	for _, f := range files[2:] {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	var extra []File
	for i := range 25 {
		f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprint("x", i)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("unsynced"), 0); err != nil {
			t.Fatal(err)
		}
		extra = append(extra, f)
	}
	if p.held() < 25 {
		t.Fatalf("%d descriptors held: opens past a short wait did not go ahead", p.held())
	}
	for _, f := range append(append(files, closed), extra...) {
		f.Close()
	}
}

// waitUntil waits for cond, failing the test after 10 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		runtime.Gosched()
	}
}

// A file removed, or renamed over, through the FS keeps reading its own bytes; one renamed
// through it is reopened under its new name; one replaced behind the FS's back fails
// instead of reading another file.
func TestPoolFollowsRemovesAndRenames(t *testing.T) {
	fs, p := poolFS(16)
	dir := t.TempDir()
	open := func(name, content string) File {
		f, err := fs.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		writeAndSync(t, f, []byte(content))
		return f
	}
	removed := open("removed", "removed's bytes")
	evictAll(p)
	if err := fs.Remove(filepath.Join(dir, "removed")); err != nil {
		t.Fatal(err)
	}
	open("removed", "a new file of that name")
	evictAll(p)
	if got := string(readAll(t, removed)); got != "removed's bytes" {
		t.Fatalf("a removed file reads %q", got)
	}

	moved := open("a", "a's bytes")
	over := open("b", "b's bytes")
	evictAll(p)
	if err := fs.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	open("a", "a new a")
	evictAll(p)
	if got := string(readAll(t, moved)); got != "a's bytes" {
		t.Fatalf("a renamed file reads %q", got)
	}
	if got := string(readAll(t, over)); got != "b's bytes" {
		t.Fatalf("a file renamed over reads %q", got)
	}

	behind := open("behind", "the first bytes")
	evictAll(p)
	if err := os.Remove(filepath.Join(dir, "behind")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "behind"), []byte("other bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := behind.ReadAt(make([]byte, 4), 0); !errors.Is(err, errFileReplaced) {
		t.Fatalf("reading a file replaced behind the FS: %v, want errFileReplaced", err)
	}

	// Removing a directory pins the files in it.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	inSub, err := fs.OpenFile(filepath.Join(sub, "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	writeAndSync(t, inSub, []byte("in a removed directory"))
	evictAll(p)
	if err := fs.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	evictAll(p)
	if got := string(readAll(t, inSub)); got != "in a removed directory" {
		t.Fatalf("a file of a removed directory reads %q", got)
	}
}

// Concurrent readers, writers and syncers on more files than the budget (run with -race).
func TestPoolConcurrentUse(t *testing.T) {
	fs, p := poolFS(16)
	dir := t.TempDir()
	const n = 48
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			if err := writeRounds(f, byte(i), 512, 20, 4); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if p.held() != 0 {
		t.Fatalf("%d descriptors held after every file closed", p.held())
	}
}

// State files replaced atomically (WriteFileAtomic: a closed temporary file renamed over
// the name, which no open file of the pool is under) while other files of the same
// folders are opened, reopened past the budget and read: every replacement lands, every
// read sees its own file's bytes, and the pool ends holding nothing. Such renames run
// outside the pool's lock; opens and renames of the same names are kept apart.
func TestPoolRenamesOutsideTheLockKeepFilesApart(t *testing.T) {
	fs, p := poolFS(8)
	dir := t.TempDir()
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for round := range 20 {
				if err := WriteFileAtomic(fs, filepath.Join(sub, "state"), []byte(fmt.Sprintf("%d/%d", i, round))); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			f, err := fs.OpenFile(filepath.Join(sub, "log"), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			if err := writeRounds(f, byte(i), 256, 20, 1); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range n {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(i), "state"))
		if err != nil || string(b) != fmt.Sprintf("%d/19", i) {
			t.Fatalf("state %d: %q %v", i, b, err)
		}
	}
	if p.held() != 0 {
		t.Fatalf("%d descriptors held after every file closed", p.held())
	}
}

// writeRounds writes rounds blocks of size bytes of fill to f one after another, syncs
// after every syncEvery-th, and reads each back at once.
func writeRounds(f File, fill byte, size, rounds, syncEvery int) error {
	want := bytes.Repeat([]byte{fill}, size)
	for round := range rounds {
		off := int64(round * size)
		if _, err := f.WriteAt(want, off); err != nil {
			return err
		}
		if round%syncEvery == syncEvery-1 {
			if err := f.Sync(); err != nil {
				return err
			}
		}
		got := make([]byte, size)
		if _, err := f.ReadAt(got, off); err != nil || !bytes.Equal(got, want) {
			return fmt.Errorf("file %d round %d: %v", fill, round, err)
		}
	}
	return nil
}
