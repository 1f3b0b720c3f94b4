package main

// The write-back logic without FUSE: a fileState over a real backing file, checked
// against a plain model of what a file and its last fsync hold.

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

func newState(t *testing.T, initial []byte) (*fileState, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, initial, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s, err := newFileState(1, f)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

func content(t *testing.T, s *fileState) []byte {
	t.Helper()
	s.mu.Lock()
	n := s.size
	s.mu.Unlock()
	buf := make([]byte, n+100)
	m, err := s.ReadAt(buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:m]
}

func backing(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFsyncedSurvivesLose(t *testing.T) {
	s, p := newState(t, nil)
	s.WriteAt([]byte("durable"), 0)
	if n, err := s.Sync(); err != nil || n != 7 {
		t.Fatalf("sync wrote %d (%v), want 7", n, err)
	}
	s.WriteAt([]byte("-volatile"), 7)
	if got := content(t, s); string(got) != "durable-volatile" {
		t.Fatalf("before the crash the file reads %q", got)
	}
	if got := backing(t, p); string(got) != "durable" {
		t.Fatalf("unsynced bytes reached the backing file: %q", got)
	}
	if n := s.Lose(); n != 9 {
		t.Fatalf("lose dropped %d bytes, want 9", n)
	}
	if got := content(t, s); string(got) != "durable" {
		t.Fatalf("after the crash the file reads %q, want its fsynced content", got)
	}
}

func TestUnsyncedIsGone(t *testing.T) {
	s, _ := newState(t, nil)
	s.WriteAt(bytes.Repeat([]byte("x"), 10000), 0)
	if n := s.Lose(); n != 10000 {
		t.Fatalf("dropped %d bytes, want 10000", n)
	}
	if got := content(t, s); len(got) != 0 {
		t.Fatalf("a never-fsynced file kept %d bytes", len(got))
	}
	if s.dirty() {
		t.Fatal("still dirty after lose")
	}
}

func TestTruncationIsWriteBackToo(t *testing.T) {
	old := bytes.Repeat([]byte("o"), 10000)
	s, p := newState(t, old)
	s.Truncate(100)
	s.WriteAt([]byte("new"), 5000)
	got := content(t, s)
	want := append(append(bytes.Clone(old[:100]), make([]byte, 4900)...), "new"...)
	if !bytes.Equal(got, want) {
		t.Fatal("a truncated then extended file must read zeros in the gap")
	}
	s.Lose()
	if got := content(t, s); !bytes.Equal(got, old) {
		t.Fatal("an unsynced truncation must be undone by lose")
	}
	s.Truncate(100)
	s.WriteAt([]byte("new"), 5000)
	if _, err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := backing(t, p); !bytes.Equal(got, want) {
		t.Fatal("the synced backing file differs from what the file showed")
	}
}

// model is what a file shows and what its last fsync left, as plain byte slices.
type model struct{ now, synced []byte }

func (m *model) write(data []byte, off int64) {
	if end := off + int64(len(data)); end > int64(len(m.now)) {
		m.now = append(m.now, make([]byte, end-int64(len(m.now)))...)
	}
	copy(m.now[off:], data)
}

func (m *model) truncate(n int64) {
	if n <= int64(len(m.now)) {
		m.now = m.now[:n]
	} else {
		m.now = append(m.now, make([]byte, n-int64(len(m.now)))...)
	}
}

// Random writes, truncations, fsyncs and crashes, against the model: reads, the
// backing file after each fsync, and the content after each crash all agree.
func TestOverlayMatchesModel(t *testing.T) {
	for seed := int64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewSource(seed))
		initial := make([]byte, rng.Intn(3*PageSize))
		rng.Read(initial)
		s, p := newState(t, initial)
		m := &model{now: bytes.Clone(initial), synced: bytes.Clone(initial)}
		for step := 0; step < 80; step++ {
			switch r := rng.Intn(10); {
			case r < 5:
				data := make([]byte, 1+rng.Intn(2*PageSize))
				rng.Read(data)
				off := int64(rng.Intn(5 * PageSize))
				s.WriteAt(data, off)
				m.write(data, off)
			case r < 7:
				n := int64(rng.Intn(5 * PageSize))
				s.Truncate(n)
				m.truncate(n)
			case r < 9:
				if _, err := s.Sync(); err != nil {
					t.Fatal(err)
				}
				m.synced = bytes.Clone(m.now)
				if !bytes.Equal(backing(t, p), m.synced) {
					t.Fatalf("seed %d step %d: backing file differs after fsync", seed, step)
				}
			default:
				s.Lose()
				m.now = bytes.Clone(m.synced)
			}
			if got := content(t, s); !bytes.Equal(got, m.now) {
				t.Fatalf("seed %d step %d: read %d bytes, model has %d", seed, step, len(got), len(m.now))
			}
		}
	}
}

// Torn: some cut page c exists such that the file is its synced content with the
// dirty pages below c on top, and its length is max(synced, min(now, c*page)).
func TestTornKeepsAPrefixOfPages(t *testing.T) {
	sawPartial := false
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		synced := make([]byte, PageSize*2+123)
		rng.Read(synced)
		s, _ := newState(t, synced)
		now := bytes.Clone(synced)
		// Appends and an overwrite, the way a log and its index change.
		for i := 0; i < 6; i++ {
			data := make([]byte, 1000+rng.Intn(3000))
			rng.Read(data)
			off := int64(len(now))
			if i == 2 {
				off = 10
			}
			s.WriteAt(data, off)
			m := &model{now: now}
			m.write(data, off)
			now = m.now
		}
		_, kept, dropped, err := s.Tear(rand.New(rand.NewSource(seed)))
		if err != nil {
			t.Fatal(err)
		}
		got := content(t, s)
		match := false
		for c := int64(0); c <= int64(len(now)/PageSize)+1 && !match; c++ {
			size := max(int64(len(synced)), min(int64(len(now)), c*PageSize))
			want := make([]byte, size)
			copy(want, synced)
			copy(want[:min(size, c*PageSize)], now[:min(int64(len(now)), c*PageSize)])
			match = bytes.Equal(got, want)
		}
		if !match {
			t.Fatalf("seed %d: torn content is no page prefix of the writes", seed)
		}
		if kept > 0 && dropped > 0 {
			sawPartial = true
		}
		if s.dirty() {
			t.Fatalf("seed %d: torn leaves the file dirty", seed)
		}
	}
	if !sawPartial {
		t.Fatal("no seed kept part and dropped part: the cut is not random")
	}
}

func TestMmapStyleWholePageWrites(t *testing.T) {
	// The kernel writes shared-mmap pages back whole: an index entry written through
	// mmap arrives as its page.
	s, _ := newState(t, make([]byte, 3*PageSize))
	pg := make([]byte, PageSize)
	copy(pg[8:], "entry")
	s.WriteAt(pg, PageSize)
	if _, err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	pg2 := bytes.Clone(pg)
	copy(pg2[16:], "later")
	s.WriteAt(pg2, PageSize)
	if n := s.Lose(); n != PageSize {
		t.Fatalf("a dirty mmap page drops %d bytes, want one page", n)
	}
	got := content(t, s)
	if !bytes.Equal(got[PageSize:2*PageSize], pg) {
		t.Fatal("the page must read as at its last fsync")
	}
}
