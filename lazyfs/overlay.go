package main

// The write-back overlay of one file: what was written since its last fsync lives
// here, in memory, page by page; the backing file holds exactly what the last
// fsync left. Nothing in this file knows about FUSE, so it is tested directly.

import (
	"math/rand"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"
)

// PageSize is the unit of the overlay and of the torn-write rule: the kernel writes
// back, and mmap dirties, whole pages.
const PageSize = 4096

type page struct {
	buf    []byte // PageSize bytes: the page's whole content as the file shows it now
	lo, hi int    // the part written since the last fsync
}

// fileState is one file's content: backing bytes [0, baseLen) as they were at the
// last fsync, zeros from baseLen on, dirty pages on top, cut at size.
type fileState struct {
	mu      sync.Mutex
	ino     uint64
	fd      *os.File // the backing file, read-write; survives renames and unlinks
	synced  int64    // the backing file's length: the length at the last fsync
	baseLen int64    // backing bytes still shown: synced, lowered by truncations since
	size    int64    // the length the file has now
	pages   map[int64]*page
	mtime   time.Time
	opens   int  // open handles
	gone    bool // unlinked: no name reaches it any more
}

func newFileState(ino uint64, fd *os.File) (*fileState, error) {
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	n := st.Size()
	return &fileState{
		ino: ino, fd: fd, synced: n, baseLen: n, size: n,
		pages: map[int64]*page{}, mtime: st.ModTime(),
	}, nil
}

// dirty: the file differs from what its last fsync left.
func (s *fileState) dirty() bool {
	return len(s.pages) > 0 || s.size != s.synced || s.baseLen != s.synced
}

// dirtyBytes: bytes written since the last fsync that the file still shows (a page
// dirtied through mmap counts whole, as the kernel writes it back whole). A change
// of length alone (a truncation, or the extension by which Kafka preallocates its
// index files) makes the file dirty but counts no bytes.
func (s *fileState) dirtyBytes() int64 {
	var n int64
	for idx, p := range s.pages {
		lo, hi := idx*PageSize+int64(p.lo), idx*PageSize+int64(p.hi)
		if hi > s.size {
			hi = s.size
		}
		if hi > lo {
			n += hi - lo
		}
	}
	return n
}

// readBase fills buf with the file's content at off as the backing file gives it:
// backing bytes below baseLen, zeros from there on.
func (s *fileState) readBase(buf []byte, off int64) error {
	n := int64(0)
	if off < s.baseLen {
		want := s.baseLen - off
		if want > int64(len(buf)) {
			want = int64(len(buf))
		}
		for n < want {
			m, err := s.fd.ReadAt(buf[n:want], off+n)
			n += int64(m)
			if err != nil {
				if m == 0 {
					break // the backing file is shorter than it should be: zeros
				}
			}
		}
	}
	clear(buf[n:])
	return nil
}

// ReadAt returns the file's content at off, at most len(buf) bytes.
func (s *fileState) ReadAt(buf []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if off >= s.size {
		return 0, nil
	}
	end := off + int64(len(buf))
	if end > s.size {
		end = s.size
	}
	buf = buf[:end-off]
	if err := s.readBase(buf, off); err != nil {
		return 0, err
	}
	for idx := off / PageSize; idx*PageSize < end; idx++ {
		p, ok := s.pages[idx]
		if !ok {
			continue
		}
		pStart := idx * PageSize
		from, to := max(off, pStart), min(end, pStart+PageSize)
		copy(buf[from-off:to-off], p.buf[from-pStart:to-pStart])
	}
	return len(buf), nil
}

// WriteAt puts data at off into the overlay.
func (s *fileState) WriteAt(data []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := off + int64(len(data))
	for idx := off / PageSize; idx*PageSize < end; idx++ {
		pStart := idx * PageSize
		p, ok := s.pages[idx]
		if !ok {
			p = &page{buf: make([]byte, PageSize), lo: PageSize, hi: 0}
			if err := s.readBase(p.buf, pStart); err != nil {
				return 0, err
			}
			// Bytes past the current length read as zeros, whatever the base holds.
			if s.size < pStart+PageSize && s.size > pStart {
				clear(p.buf[s.size-pStart:])
			} else if s.size <= pStart {
				clear(p.buf)
			}
			s.pages[idx] = p
		}
		from, to := max(off, pStart), min(end, pStart+PageSize)
		copy(p.buf[from-pStart:to-pStart], data[from-off:to-off])
		p.lo = min(p.lo, int(from-pStart))
		p.hi = max(p.hi, int(to-pStart))
	}
	if end > s.size {
		s.size = end
	}
	s.mtime = time.Now()
	return len(data), nil
}

// Truncate sets the length, as ftruncate does: bytes past it are gone, a later
// extension reads zeros.
func (s *fileState) Truncate(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.truncateLocked(n)
}

func (s *fileState) truncateLocked(n int64) {
	if n < s.size {
		for idx, p := range s.pages {
			pStart := idx * PageSize
			switch {
			case pStart >= n:
				delete(s.pages, idx)
			case pStart+PageSize > n:
				clear(p.buf[n-pStart:])
				p.hi = min(p.hi, int(n-pStart))
				if p.lo >= p.hi {
					// Nothing written since the fsync is left in it: below n it holds
					// what the base shows.
					delete(s.pages, idx)
				}
			}
		}
		if n < s.baseLen {
			s.baseLen = n
		}
	}
	s.size = n
	s.mtime = time.Now()
}

// Sync makes the overlay durable: the backing file gets the file's content and
// length, and is fsynced. Returns the bytes it wrote back; Synced says whether
// there was anything to write.
func (s *fileState) Sync() (int64, error) {
	_, n, err := s.Synced()
	return n, err
}

func (s *fileState) Synced() (bool, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dirty := s.dirty()
	n, err := s.syncLocked()
	return dirty, n, err
}

func (s *fileState) syncLocked() (int64, error) {
	if !s.dirty() {
		return 0, nil
	}
	n := s.dirtyBytes()
	// Backing bytes the file no longer shows go first, so an extension reads zeros.
	if s.baseLen < s.synced {
		if err := s.fd.Truncate(s.baseLen); err != nil {
			return 0, err
		}
	}
	idxs := make([]int64, 0, len(s.pages))
	for idx := range s.pages {
		idxs = append(idxs, idx)
	}
	sort.Slice(idxs, func(i, j int) bool { return idxs[i] < idxs[j] })
	for _, idx := range idxs {
		pStart := idx * PageSize
		if pStart >= s.size {
			continue
		}
		end := min(s.size-pStart, PageSize)
		if _, err := s.fd.WriteAt(s.pages[idx].buf[:end], pStart); err != nil {
			return 0, err
		}
	}
	if err := s.fd.Truncate(s.size); err != nil {
		return 0, err
	}
	if err := syscall.Fdatasync(int(s.fd.Fd())); err != nil {
		return 0, err
	}
	s.synced, s.baseLen = s.size, s.size
	s.pages = map[int64]*page{}
	return n, nil
}

// Lose drops everything written since the last fsync: the file is again what its
// last fsync left. Returns the bytes dropped.
func (s *fileState) Lose() int64 {
	_, n := s.Lost()
	return n
}

// Lost is Lose that also says whether the file changed back.
func (s *fileState) Lost() (bool, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty() {
		return false, 0
	}
	n := s.dirtyBytes()
	s.pages = map[int64]*page{}
	s.size, s.baseLen = s.synced, s.synced
	return true, n
}

// Tear is a crash in the middle of the kernel's write-back: the dirty pages below a
// cut page (chosen by rng among 0..the file's last page+1) reached the disk, the
// others did not, and the length is the synced one grown to cover the kept pages
// (never past the current length). Truncations are lost. Returns whether the file
// was dirty, and the bytes kept and dropped.
func (s *fileState) Tear(rng *rand.Rand) (changed bool, kept, dropped int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty() {
		return false, 0, 0, nil
	}
	total := s.dirtyBytes()
	last := (max(s.size, s.synced) + PageSize - 1) / PageSize
	cut := rng.Int63n(last + 1)
	for idx := range s.pages {
		if idx >= cut {
			delete(s.pages, idx)
		}
	}
	newSize := max(s.synced, min(s.size, cut*PageSize))
	// The kept pages land on the synced content: a lost truncation leaves the old
	// bytes readable again.
	s.baseLen = s.synced
	s.size = newSize
	kept = s.dirtyBytes()
	if _, err := s.syncLocked(); err != nil {
		return true, 0, 0, err
	}
	return true, kept, total - kept, nil
}
